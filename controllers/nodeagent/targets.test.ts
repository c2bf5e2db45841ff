import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import type { ClusterDnsSettings } from '../../reconcilers/dns/pod-dns.js';
import { DEFAULT_EVICTION } from '../eviction/thresholds.js';
import { createSettingsTargets } from './targets.js';

/** A pino destination that keeps each line's message. */
function capture(): { stream: Writable; messages: string[] } {
  const messages: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const line = JSON.parse(chunk.toString()) as { msg: string };
      messages.push(line.msg);
      done();
    },
  });
  return { stream, messages };
}

describe('settings targets', () => {
  it('hands each setting to the part that uses it', () => {
    const calls: string[] = [];
    const logger = pino({ level: 'silent' });
    let cluster: ClusterDnsSettings = { servers: [], domain: 'cluster.local' };
    const dns = { clusterSettings: () => cluster, setClusterSettings: (s: ClusterDnsSettings) => { cluster = s; } };
    const targets = createSettingsTargets({
      queue: { setConcurrency: (n) => calls.push(`queue.setConcurrency(${n})`) },
      resync: { setPeriodMs: (ms) => calls.push(`resync.setPeriodMs(${ms})`) },
      node: { setMaxPods: (n) => calls.push(`node.setMaxPods(${n})`), setReserved: (r) => calls.push(`node.setReserved(${JSON.stringify(r)})`) },
      pause: { setPaused: (p) => calls.push(`pause.setPaused(${p})`) },
      logger,
      dns,
      gc: { setSettings: (gc) => calls.push(`gc.setSettings(${gc.imageHighThresholdPercent}/${gc.imageLowThresholdPercent})`) },
      logRotation: { setSettings: (r) => calls.push(`logRotation.setSettings(${r.containerLogMaxSize}/${r.containerLogMaxFiles})`) },
      crashLoopBackOff: { setSettings: (c) => calls.push(`crashLoopBackOff.setSettings(${c.maxContainerRestartPeriodMs})`) },
      imagePulls: { setSettings: (p) => calls.push(`imagePulls.setSettings(${p.serializeImagePulls}/${p.registryPullQPS})`) },
      eviction: { setSettings: (e) => calls.push(`eviction.setSettings(${JSON.stringify(e.hard)}/${e.pressureTransitionPeriodSeconds})`) },
    });
    targets.setWorkerConcurrency(8);
    targets.setResyncPeriodSeconds(30);
    targets.setMaxPods(20);
    targets.setPaused(true);
    targets.setClusterDNS(['10.215.0.10']);
    targets.setClusterDomain('example.internal');
    targets.setGc({ maxDeadContainersPerPod: 1, maxDeadContainers: -1, minContainerAgeSeconds: 0, imageHighThresholdPercent: 60, imageLowThresholdPercent: 50, imageMinimumGCAgeSeconds: 0, imageMaximumGCAgeSeconds: 0 });
    targets.setLogRotation({ containerLogMaxSize: '1Ki', containerLogMaxFiles: 2 });
    targets.setCrashLoopBackOff({ maxContainerRestartPeriodMs: 2000 });
    targets.setImagePulls({ serializeImagePulls: false, maxParallelImagePulls: 3, registryPullQPS: 0, registryBurst: 0 });
    targets.setReserved({ systemReserved: { cpu: '500m' }, kubeReserved: {} });
    targets.setEviction({ ...DEFAULT_EVICTION, hard: { 'memory.available': '1Gi' }, pressureTransitionPeriodSeconds: 5 });
    assert.deepEqual(calls, [
      'queue.setConcurrency(8)',
      'resync.setPeriodMs(30000)',
      'node.setMaxPods(20)',
      'pause.setPaused(true)',
      'gc.setSettings(60/50)',
      'logRotation.setSettings(1Ki/2)',
      'crashLoopBackOff.setSettings(2000)',
      'imagePulls.setSettings(false/0)',
      'node.setReserved({"systemReserved":{"cpu":"500m"},"kubeReserved":{}})',
      'eviction.setSettings({"memory.available":"1Gi"}/5)',
    ]);
    // Each DNS setting replaces its half and keeps the other.
    assert.deepEqual(dns.clusterSettings(), { servers: ['10.215.0.10'], domain: 'example.internal' });
  });

  it('changes the level of component loggers created before the change', async () => {
    const { stream, messages } = capture();
    const root = pino({ level: 'info' }, stream);
    const component = root.child({ component: 'reconciler' }).child({ podUID: 'u1' });
    const noop = { setConcurrency: () => undefined, setPeriodMs: () => undefined, setMaxPods: () => undefined, setReserved: () => undefined, setPaused: () => undefined, setSettings: () => undefined };
    const dns = { clusterSettings: () => ({ servers: [], domain: '' }), setClusterSettings: () => undefined };
    const targets = createSettingsTargets({ queue: noop, resync: noop, node: noop, pause: noop, logger: root, dns, gc: noop, logRotation: noop, crashLoopBackOff: noop, imagePulls: noop, eviction: noop });
    component.debug('hidden at info');
    targets.setLogLevel('debug');
    component.debug('shown at debug');
    targets.setLogLevel('error');
    component.warn('hidden at error');
    await new Promise<void>((resolve) => setImmediate(resolve));
    assert.deepEqual(messages, ['shown at debug']);
  });
});
