import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_EVICTION } from '../eviction/thresholds.js';
import { DEFAULT_GC, DEFAULT_LOG_ROTATION, logSizeBytes, resolveSettings, type BaseSettings } from './settings.js';

const base: BaseSettings = { workerConcurrency: 4, resyncPeriodSeconds: 60, maxPods: 110, logLevel: 'info' };

describe('resolveSettings', () => {
  it('uses the flag values and the kubelet defaults when the spec is empty or absent', () => {
    for (const spec of [{}, undefined, null]) {
      const { settings, invalid } = resolveSettings(spec, base);
      assert.deepEqual(settings, {
        workerConcurrency: 4,
        resyncPeriodSeconds: 60,
        maxPods: 110,
        paused: false,
        logLevel: 'info',
        clusterDNS: [],
        clusterDomain: 'cluster.local',
        gc: DEFAULT_GC,
        logRotation: DEFAULT_LOG_ROTATION,
        crashLoopBackOff: { maxContainerRestartPeriodMs: 300_000 },
        imagePulls: { serializeImagePulls: true, maxParallelImagePulls: null, registryPullQPS: 5, registryBurst: 10 },
        systemReserved: {},
        kubeReserved: {},
        eviction: DEFAULT_EVICTION,
      });
      assert.deepEqual(invalid, []);
    }
  });

  it('reads crashLoopBackOff.maxContainerRestartPeriod as a Go duration from 1s to 5m', () => {
    const period = (value: unknown): number => resolveSettings({ crashLoopBackOff: { maxContainerRestartPeriod: value } }, base).settings.crashLoopBackOff.maxContainerRestartPeriodMs;
    assert.equal(period('2s'), 2000);
    assert.equal(period('1m30s'), 90_000);
    assert.equal(period('5m'), 300_000);
    assert.equal(period('1s'), 1000);
    for (const bad of ['0.5s', '301s', '10', 10, '-1s', '']) {
      const { settings, invalid } = resolveSettings({ crashLoopBackOff: { maxContainerRestartPeriod: bad } }, base);
      assert.equal(settings.crashLoopBackOff.maxContainerRestartPeriodMs, 300_000, String(bad));
      assert.equal(invalid[0]?.field, 'spec.crashLoopBackOff.maxContainerRestartPeriod');
    }
  });

  it('reads imagePulls, refusing a parallel limit other than 1 with serialized pulls as the kubelet does', () => {
    const pulls = resolveSettings({ imagePulls: { serializeImagePulls: false, maxParallelImagePulls: 3, registryPullQPS: 0.5, registryBurst: 2 } }, base);
    assert.deepEqual(pulls.settings.imagePulls, { serializeImagePulls: false, maxParallelImagePulls: 3, registryPullQPS: 0.5, registryBurst: 2 });
    assert.deepEqual(pulls.invalid, []);
    const serialized = resolveSettings({ imagePulls: { maxParallelImagePulls: 3 } }, base);
    assert.deepEqual(serialized.settings.imagePulls, { serializeImagePulls: true, maxParallelImagePulls: null, registryPullQPS: 5, registryBurst: 10 });
    assert.equal(serialized.invalid[0]?.field, 'spec.imagePulls.maxParallelImagePulls');
    const unlimited = resolveSettings({ imagePulls: { serializeImagePulls: false, maxParallelImagePulls: null } }, base);
    assert.equal(unlimited.settings.imagePulls.maxParallelImagePulls, null);
    const bad = resolveSettings({ imagePulls: { registryBurst: 1.5, registryPullQPS: -1 } }, base);
    assert.deepEqual(bad.invalid.map((p) => p.field), ['spec.imagePulls.registryPullQPS', 'spec.imagePulls.registryBurst']);
  });

  it('reads systemReserved and kubeReserved as whole maps; one bad entry keeps the flag map', () => {
    const flags: BaseSettings = { ...base, systemReserved: { cpu: '100m' } };
    const { settings, invalid } = resolveSettings({ kubeReserved: { memory: '1Gi', 'ephemeral-storage': '2Gi', pid: 100 } }, flags);
    assert.deepEqual(settings.systemReserved, { cpu: '100m' });
    assert.deepEqual(settings.kubeReserved, { memory: '1Gi', 'ephemeral-storage': '2Gi', pid: '100' });
    assert.deepEqual(invalid, []);
    for (const bad of [{ gpu: '1' }, { cpu: 'lots' }, { memory: '-1Gi' }, ['cpu=1']]) {
      const outcome = resolveSettings({ systemReserved: bad }, flags);
      assert.deepEqual(outcome.settings.systemReserved, { cpu: '100m' }, JSON.stringify(bad));
      assert.equal(outcome.invalid[0]?.field, 'spec.systemReserved');
    }
  });

  it('reads spec.eviction over the flags: a given map replaces the flag map, bad thresholds fall back to the flags', () => {
    const flags = { ...DEFAULT_EVICTION, hard: { 'memory.available': '200Mi' } };
    const ok = resolveSettings({ eviction: { hard: { 'nodefs.available': '5%' }, pressureTransitionPeriodSeconds: 10 } }, { ...base, eviction: flags });
    assert.deepEqual(ok.invalid, []);
    assert.deepEqual(ok.settings.eviction, { ...flags, hard: { 'nodefs.available': '5%' }, pressureTransitionPeriodSeconds: 10 });
    const soft = resolveSettings({ eviction: { soft: { 'memory.available': '1Gi' } } }, { ...base, eviction: flags });
    assert.deepEqual(soft.settings.eviction, flags);
    assert.deepEqual(soft.invalid, [{ field: 'spec.eviction.soft[memory.available]', message: 'a soft threshold needs a grace period (softGracePeriod)' }]);
    const unknown = resolveSettings({ eviction: { hard: { 'memory.free': '1Gi' } } }, base);
    assert.deepEqual(unknown.settings.eviction, DEFAULT_EVICTION);
    assert.equal(unknown.invalid[0]?.field, 'spec.eviction.hard[memory.free]');
    const notMap = resolveSettings({ eviction: { hard: { 'memory.available': 5 } } }, base);
    assert.equal(notMap.invalid[0]?.field, 'spec.eviction.hard');
  });

  it('takes every valid value from the spec', () => {
    const { settings, invalid } = resolveSettings(
      { workerConcurrency: 64, resyncPeriodSeconds: 5, maxPods: 1, paused: true, logLevel: 'debug' },
      { ...base, logLevel: 'warn' },
    );
    assert.deepEqual(invalid, []);
    assert.equal(settings.workerConcurrency, 64);
    assert.equal(settings.resyncPeriodSeconds, 5);
    assert.equal(settings.maxPods, 1);
    assert.equal(settings.paused, true);
    assert.equal(settings.logLevel, 'debug');
  });

  it('falls back to the flag value for each out-of-range or mistyped field and names it', () => {
    const { settings, invalid } = resolveSettings({ workerConcurrency: 0, resyncPeriodSeconds: 2.5, maxPods: '12', paused: 'yes', logLevel: 'loud' }, base);
    assert.deepEqual(settings, { ...resolveSettings({}, base).settings });
    assert.deepEqual(
      invalid.map((p) => p.field),
      ['spec.workerConcurrency', 'spec.resyncPeriodSeconds', 'spec.maxPods', 'spec.paused', 'spec.logLevel'],
    );
    assert.match(invalid[0]?.message ?? '', /from 1 to 64, got 0/);
  });

  it('takes the cluster DNS settings from the spec, else from the flags', () => {
    const fromFlags = resolveSettings({}, { ...base, clusterDNS: ['10.215.0.10'], clusterDomain: 'flag.example' }).settings;
    assert.deepEqual([fromFlags.clusterDNS, fromFlags.clusterDomain], [['10.215.0.10'], 'flag.example']);
    const { settings, invalid } = resolveSettings({ clusterDNS: ['10.215.0.53', 'fd00::53'], clusterDomain: 'spec.example' }, { ...base, clusterDNS: ['10.215.0.10'] });
    assert.deepEqual(invalid, []);
    assert.deepEqual([settings.clusterDNS, settings.clusterDomain], [['10.215.0.53', 'fd00::53'], 'spec.example']);
    assert.equal(resolveSettings({ clusterDomain: '' }, base).settings.clusterDomain, '', 'an empty domain is allowed');
  });

  it('refuses a cluster DNS that is not a list of at most 3 IPs, or a bad domain, and keeps the flag values', () => {
    const flags = { ...base, clusterDNS: ['10.215.0.10'], clusterDomain: 'flag.example' };
    for (const [spec, message] of [
      [{ clusterDNS: ['dns.example'] }, '"dns.example" is not an IP address'],
      [{ clusterDNS: '10.215.0.53' }, 'must be a list of IP addresses, got "10.215.0.53"'],
      [{ clusterDNS: ['1.1.1.1', '1.1.1.2', '1.1.1.3', '1.1.1.4'] }, 'at most 3 servers, got 4'],
    ] as const) {
      const { settings, invalid } = resolveSettings(spec, flags);
      assert.deepEqual(settings.clusterDNS, ['10.215.0.10']);
      assert.deepEqual(invalid, [{ field: 'spec.clusterDNS', message }]);
    }
    const { settings, invalid } = resolveSettings({ clusterDomain: 'Not_A.Domain' }, flags);
    assert.equal(settings.clusterDomain, 'flag.example');
    assert.deepEqual(invalid.map((p) => p.field), ['spec.clusterDomain']);
  });

  it('refuses a low image threshold that is not below the high one and keeps both defaults', () => {
    const { settings, invalid } = resolveSettings({ gc: { imageHighThresholdPercent: 70, imageLowThresholdPercent: 75 } }, base);
    assert.equal(settings.gc.imageHighThresholdPercent, 85);
    assert.equal(settings.gc.imageLowThresholdPercent, 80);
    assert.deepEqual(invalid.map((p) => p.field), ['spec.gc.imageLowThresholdPercent']);
  });

  it('takes GC and log-rotation fields from the spec', () => {
    const { settings, invalid } = resolveSettings(
      { gc: { maxDeadContainersPerPod: 3, imageHighThresholdPercent: 85 }, logRotation: { containerLogMaxSize: '20Mi', containerLogMaxFiles: 5 } },
      base,
    );
    assert.deepEqual(invalid, []);
    assert.equal(settings.gc.maxDeadContainersPerPod, 3);
    assert.deepEqual(settings.logRotation, { containerLogMaxSize: '20Mi', containerLogMaxFiles: 5 });
  });

  it('takes each unset GC field from the GC flags, and both thresholds from them when the spec puts low at or above high', () => {
    const flags = { maxDeadContainersPerPod: 2, maxDeadContainers: 50, minContainerAgeSeconds: 10, imageHighThresholdPercent: 70, imageLowThresholdPercent: 60, imageMinimumGCAgeSeconds: 30, imageMaximumGCAgeSeconds: 3600 };
    assert.deepEqual(resolveSettings({ gc: { imageMinimumGCAgeSeconds: 0 } }, { ...base, gc: flags }).settings.gc, { ...flags, imageMinimumGCAgeSeconds: 0 });
    assert.deepEqual(resolveSettings({}, base).settings.gc, { maxDeadContainersPerPod: 1, maxDeadContainers: -1, minContainerAgeSeconds: 0, imageHighThresholdPercent: 85, imageLowThresholdPercent: 80, imageMinimumGCAgeSeconds: 120, imageMaximumGCAgeSeconds: 0 });
    const crossed = resolveSettings({ gc: { imageLowThresholdPercent: 75 } }, { ...base, gc: flags });
    assert.deepEqual(crossed.invalid.map((p) => p.field), ['spec.gc.imageLowThresholdPercent']);
    assert.equal(crossed.settings.gc.imageHighThresholdPercent, 70);
    assert.equal(crossed.settings.gc.imageLowThresholdPercent, 60);
  });

  it('takes maxDeadContainers (-1: no limit) and imageMaximumGCAgeSeconds (0: off) from the spec, within bounds', () => {
    const { settings, invalid } = resolveSettings({ gc: { maxDeadContainers: 100, imageMaximumGCAgeSeconds: 604800 } }, base);
    assert.deepEqual(invalid, []);
    assert.equal(settings.gc.maxDeadContainers, 100);
    assert.equal(settings.gc.imageMaximumGCAgeSeconds, 604800);
    assert.equal(resolveSettings({ gc: { maxDeadContainers: -1, imageMaximumGCAgeSeconds: 0 } }, base).invalid.length, 0);
    const bad = resolveSettings({ gc: { maxDeadContainers: -2, imageMaximumGCAgeSeconds: -1 } }, base);
    assert.deepEqual(bad.invalid.map((p) => p.field), ['spec.gc.maxDeadContainers', 'spec.gc.imageMaximumGCAgeSeconds']);
    assert.equal(bad.settings.gc.maxDeadContainers, -1);
    assert.equal(bad.settings.gc.imageMaximumGCAgeSeconds, 0);
  });

  it('refuses a maximum image age not above the minimum (the kubelet refuses it), falling back to both flags', () => {
    const flags = { ...DEFAULT_GC, imageMinimumGCAgeSeconds: 30, imageMaximumGCAgeSeconds: 3600 };
    for (const gc of [{ imageMaximumGCAgeSeconds: 30 }, { imageMinimumGCAgeSeconds: 7200 }]) {
      const { settings, invalid } = resolveSettings({ gc }, { ...base, gc: flags });
      assert.deepEqual(invalid.map((p) => p.field), ['spec.gc.imageMaximumGCAgeSeconds'], JSON.stringify(gc));
      assert.deepEqual([settings.gc.imageMinimumGCAgeSeconds, settings.gc.imageMaximumGCAgeSeconds], [30, 3600]);
    }
    // 0 is off, whatever the minimum.
    assert.deepEqual(resolveSettings({ gc: { imageMinimumGCAgeSeconds: 7200, imageMaximumGCAgeSeconds: 0 } }, { ...base, gc: flags }).invalid, []);
  });

  it('takes each unset log-rotation field from the flags', () => {
    const flags = { containerLogMaxSize: '1Mi', containerLogMaxFiles: 3 };
    assert.deepEqual(resolveSettings({}, { ...base, logRotation: flags }).settings.logRotation, flags);
    assert.deepEqual(resolveSettings({ logRotation: { containerLogMaxFiles: 2 } }, { ...base, logRotation: flags }).settings.logRotation, { containerLogMaxSize: '1Mi', containerLogMaxFiles: 2 });
  });

  it('reads log sizes in bytes, binary and decimal', () => {
    assert.deepEqual(['1', '10Mi', '10240Ki', '1k', '2M'].map(logSizeBytes), [1, 10 * 2 ** 20, 10 * 2 ** 20, 1000, 2e6]);
    assert.ok(Number.isNaN(logSizeBytes('10MB')));
  });

  it('refuses a log size that is not a positive quantity', () => {
    for (const size of ['0', '10MB', '-1Mi', 10]) {
      const { settings, invalid } = resolveSettings({ logRotation: { containerLogMaxSize: size } }, base);
      assert.equal(settings.logRotation.containerLogMaxSize, '10Mi');
      assert.deepEqual(invalid.map((p) => p.field), ['spec.logRotation.containerLogMaxSize'], String(size));
    }
  });

  it('reports a spec or nested field that is not an object and reads it as empty', () => {
    assert.deepEqual(resolveSettings([1], base).invalid.map((p) => p.field), ['spec']);
    const { settings, invalid } = resolveSettings({ gc: 5, logRotation: 'big' }, base);
    assert.deepEqual(settings.gc, DEFAULT_GC);
    assert.deepEqual(invalid.map((p) => p.field), ['spec.logRotation', 'spec.gc']);
  });
});
