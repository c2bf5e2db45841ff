import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_EVICTION } from '../eviction/thresholds.js';
import { applySettings, type SettingsTargets } from './apply.js';
import { resolveSettings, type LiveSettings } from './settings.js';

const base = { workerConcurrency: 4, resyncPeriodSeconds: 60, maxPods: 110, logLevel: 'info' } as const;

function settings(spec: object): LiveSettings {
  return resolveSettings(spec, base).settings;
}

/** Targets that record each call, and throw for the setters named in `failing`. */
function recordingTargets(failing: ReadonlySet<string> = new Set()): SettingsTargets & { calls: string[] } {
  const calls: string[] = [];
  const call = (name: string, value: unknown): void => {
    if (failing.has(name)) throw new Error(`${name} is broken`);
    calls.push(`${name}(${String(value)})`);
  };
  return {
    calls,
    setWorkerConcurrency: (n) => { call('setWorkerConcurrency', n); },
    setResyncPeriodSeconds: (s) => { call('setResyncPeriodSeconds', s); },
    setMaxPods: (n) => { call('setMaxPods', n); },
    setPaused: (p) => { call('setPaused', p); },
    setLogLevel: (l) => { call('setLogLevel', l); },
    setClusterDNS: (servers) => { call('setClusterDNS', servers.join(',')); },
    setClusterDomain: (d) => { call('setClusterDomain', d); },
    setGc: (gc) => { call('setGc', JSON.stringify(gc)); },
    setLogRotation: (r) => { call('setLogRotation', JSON.stringify(r)); },
    setCrashLoopBackOff: (c) => { call('setCrashLoopBackOff', c.maxContainerRestartPeriodMs); },
    setImagePulls: (p) => { call('setImagePulls', JSON.stringify(p)); },
    setReserved: (r) => { call('setReserved', JSON.stringify(r)); },
    setEviction: (e) => { call('setEviction', JSON.stringify(e.hard)); },
  };
}

describe('applySettings', () => {
  it('applies every live setting on the first apply', () => {
    const targets = recordingTargets();
    const outcome = applySettings({}, settings({}), targets);
    const gc = { maxDeadContainersPerPod: 1, maxDeadContainers: -1, minContainerAgeSeconds: 0, imageHighThresholdPercent: 85, imageLowThresholdPercent: 80, imageMinimumGCAgeSeconds: 120, imageMaximumGCAgeSeconds: 0 };
    const logRotation = { containerLogMaxSize: '10Mi', containerLogMaxFiles: 5 };
    const imagePulls = { serializeImagePulls: true, maxParallelImagePulls: null, registryPullQPS: 5, registryBurst: 10 };
    const reserved = { systemReserved: {}, kubeReserved: {} };
    assert.deepEqual(targets.calls, ['setWorkerConcurrency(4)', 'setResyncPeriodSeconds(60)', 'setMaxPods(110)', 'setPaused(false)', 'setLogLevel(info)', 'setClusterDNS()', 'setClusterDomain(cluster.local)', `setGc(${JSON.stringify(gc)})`, `setLogRotation(${JSON.stringify(logRotation)})`, 'setCrashLoopBackOff(300000)', `setImagePulls(${JSON.stringify(imagePulls)})`, `setReserved(${JSON.stringify(reserved)})`, `setEviction(${JSON.stringify(DEFAULT_EVICTION.hard)})`]);
    assert.deepEqual(outcome.applied, { workerConcurrency: 4, resyncPeriodSeconds: 60, maxPods: 110, paused: false, logLevel: 'info', clusterDNS: [], clusterDomain: 'cluster.local', gc, logRotation, crashLoopBackOff: { maxContainerRestartPeriodMs: 300000 }, imagePulls, systemReserved: {}, kubeReserved: {}, eviction: DEFAULT_EVICTION });
    assert.deepEqual(outcome.failures, []);
  });

  it('applies only what changed afterwards (the GC and log-rotation groups when one of their fields changed)', () => {
    const first = applySettings({}, settings({}), recordingTargets());
    const targets = recordingTargets();
    const outcome = applySettings(first.applied, settings({ paused: true, workerConcurrency: 8, gc: { maxDeadContainersPerPod: 5 }, logRotation: { containerLogMaxFiles: 3 } }), targets);
    assert.deepEqual(targets.calls, [
      'setWorkerConcurrency(8)',
      'setPaused(true)',
      'setGc({"maxDeadContainersPerPod":5,"maxDeadContainers":-1,"minContainerAgeSeconds":0,"imageHighThresholdPercent":85,"imageLowThresholdPercent":80,"imageMinimumGCAgeSeconds":120,"imageMaximumGCAgeSeconds":0})',
      'setLogRotation({"containerLogMaxSize":"10Mi","containerLogMaxFiles":3})',
    ]);
    assert.deepEqual(outcome.changed, ['spec.workerConcurrency', 'spec.paused', 'spec.gc', 'spec.logRotation']);
    assert.equal(outcome.applied.workerConcurrency, 8);
    const again = recordingTargets();
    assert.deepEqual(applySettings(outcome.applied, settings({ paused: true, workerConcurrency: 8, gc: { maxDeadContainersPerPod: 5 }, logRotation: { containerLogMaxFiles: 3 } }), again).changed, []);
    assert.deepEqual(again.calls, []);
  });

  it('applies the eviction settings when a threshold map changed, not for an equal new map', () => {
    const first = applySettings({}, settings({ eviction: { hard: { 'memory.available': '1Gi' } } }), recordingTargets());
    const same = recordingTargets();
    assert.deepEqual(applySettings(first.applied, settings({ eviction: { hard: { 'memory.available': '1Gi' } } }), same).changed, []);
    const changed = recordingTargets();
    assert.deepEqual(applySettings(first.applied, settings({ eviction: { hard: { 'memory.available': '2Gi' } } }), changed).changed, ['spec.eviction']);
    assert.deepEqual(changed.calls, ['setEviction({"memory.available":"2Gi"})']);
  });

  it('applies the cluster DNS list only when its content changed, not for an equal new list', () => {
    const first = applySettings({}, settings({ clusterDNS: ['10.215.0.10'] }), recordingTargets());
    const same = recordingTargets();
    assert.deepEqual(applySettings(first.applied, settings({ clusterDNS: ['10.215.0.10'] }), same).changed, []);
    assert.deepEqual(same.calls, []);
    const changed = recordingTargets();
    const outcome = applySettings(first.applied, settings({ clusterDNS: ['10.215.0.10', '10.215.0.11'], clusterDomain: 'example.internal' }), changed);
    assert.deepEqual(changed.calls, ['setClusterDNS(10.215.0.10,10.215.0.11)', 'setClusterDomain(example.internal)']);
    assert.deepEqual(outcome.changed, ['spec.clusterDNS', 'spec.clusterDomain']);
  });

  it('keeps going past a failing setter, reports it, and retries it on the next apply', () => {
    const first = applySettings({}, settings({}), recordingTargets());
    const next = settings({ maxPods: 50, logLevel: 'debug' });
    const broken = recordingTargets(new Set(['setMaxPods']));
    const outcome = applySettings(first.applied, next, broken);
    assert.deepEqual(broken.calls, ['setLogLevel(debug)']);
    assert.deepEqual(outcome.failures, [{ field: 'spec.maxPods', message: 'setMaxPods is broken' }]);
    assert.equal(outcome.applied.maxPods, 110);
    const fixed = recordingTargets();
    const retried = applySettings(outcome.applied, next, fixed);
    assert.deepEqual(fixed.calls, ['setMaxPods(50)']);
    assert.deepEqual(retried.failures, []);
  });

  it('retries a setting whose very first apply failed', () => {
    const outcome = applySettings({}, settings({}), recordingTargets(new Set(['setPaused'])));
    assert.equal(outcome.applied.paused, undefined);
    const targets = recordingTargets();
    applySettings(outcome.applied, settings({}), targets);
    assert.deepEqual(targets.calls, ['setPaused(false)']);
  });
});
