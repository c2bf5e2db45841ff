/**
 * Local storage limits: the pure verdict (`localStorageViolation`, the kubelet's order and words),
 * the manager evicting every pod over a limit whatever the pressure, and the readers measuring
 * real directories.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { NodeKill } from '../../reconcilers/lifecycle/evictions.js';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { measureDir } from '../../util/dir-usage.js';
import { EvictionManager } from './eviction-manager.js';
import { hasLocalStorageLimits, localStorageViolation, type LocalStorageUsage } from './local-storage.js';
import { readLocalStorageUsage } from './pod-usage.js';
import { DEFAULT_EVICTION } from './thresholds.js';

const Mi = 2 ** 20;

function pod(name: string, spec: Partial<V1PodSpec> = {}): V1Pod {
  return { metadata: { name, namespace: 'ns', uid: `uid-${name}` }, spec: { containers: [{ name: 'main' }], ...spec } };
}

function usage(p: V1Pod, u: Partial<Omit<LocalStorageUsage, 'pod'>> = {}): LocalStorageUsage {
  return { pod: p, emptyDirBytes: new Map(), containers: [], podBytes: 0, ...u };
}

const shared = { dedicatedImageFs: false };

describe('local storage limits: the verdict', () => {
  it('an emptyDir over its sizeLimit (disk or tmpfs); at the limit, or without one, is fine', () => {
    const p = pod('a', { volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '1Mi' } }, { name: 'free', emptyDir: {} }, { name: 'ram', emptyDir: { medium: 'Memory', sizeLimit: '2Mi' } }] });
    assert.equal(localStorageViolation(usage(p, { emptyDirBytes: new Map([['scratch', Mi], ['free', 100 * Mi]]) }), shared), undefined);
    assert.deepEqual(localStorageViolation(usage(p, { emptyDirBytes: new Map([['scratch', Mi + 4096]]) }), shared), { signal: 'emptydirfs.limit', message: 'Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ' });
    assert.deepEqual(localStorageViolation(usage(p, { emptyDirBytes: new Map([['ram', 3 * Mi]]) }), shared), { signal: 'emptydirfs.limit', message: 'Usage of EmptyDir volume "ram" exceeds the limit "2Mi". ' });
  });

  it('a container over its ephemeral-storage limit: logs plus writable layer, the layer not counted on a dedicated image filesystem', () => {
    const p = pod('a', { containers: [{ name: 'main', resources: { limits: { 'ephemeral-storage': '10Mi' } } }, { name: 'free' }] });
    const over = usage(p, { containers: [{ name: 'free', rootfsBytes: 500 * Mi }, { name: 'main', rootfsBytes: 8 * Mi, logsBytes: 3 * Mi }] });
    assert.deepEqual(localStorageViolation(over, shared), { signal: 'ephemeralcontainerfs.limit', message: 'Container main exceeded its local ephemeral storage limit "10Mi". ' });
    assert.equal(localStorageViolation(over, { dedicatedImageFs: true }), undefined);
  });

  it('the pod over the sum of its containers\' limits (layers, logs, local volumes), printed as a quantity', () => {
    const p = pod('a', { containers: [{ name: 'a', resources: { limits: { 'ephemeral-storage': '5Mi' } } }, { name: 'b', resources: { limits: { 'ephemeral-storage': '5Mi' } } }] });
    assert.equal(localStorageViolation(usage(p, { podBytes: 10 * Mi }), shared), undefined);
    assert.deepEqual(localStorageViolation(usage(p, { podBytes: 10 * Mi + 1 }), shared), { signal: 'ephemeralpodfs.limit', message: 'Pod ephemeral local storage usage exceeds the total limit of containers 10Mi. ' });
    const one = pod('b', { containers: [{ name: 'a', resources: { limits: { 'ephemeral-storage': '100M' } } }, { name: 'b' }] });
    assert.equal(localStorageViolation(usage(one, { podBytes: 100e6 + 1 }), shared)?.message, 'Pod ephemeral local storage usage exceeds the total limit of containers 100M. ');
  });

  it('checks in the kubelet\'s order: emptyDir, then the pod, then a container', () => {
    const p = pod('a', { volumes: [{ name: 'v', emptyDir: { sizeLimit: '1Mi' } }], containers: [{ name: 'main', resources: { limits: { 'ephemeral-storage': '2Mi' } } }] });
    const all = usage(p, { emptyDirBytes: new Map([['v', 2 * Mi]]), podBytes: 9 * Mi, containers: [{ name: 'main', rootfsBytes: 9 * Mi }] });
    assert.equal(localStorageViolation(all, shared)?.signal, 'emptydirfs.limit');
    assert.equal(localStorageViolation({ ...all, emptyDirBytes: new Map() }, shared)?.signal, 'ephemeralpodfs.limit');
    assert.equal(localStorageViolation({ ...all, emptyDirBytes: new Map(), podBytes: 0 }, shared)?.signal, 'ephemeralcontainerfs.limit');
  });

  it('only pods with a sizeLimit or an ephemeral-storage limit are measured', () => {
    assert.equal(hasLocalStorageLimits(pod('a', { volumes: [{ name: 'v', emptyDir: {} }] })), false);
    assert.equal(hasLocalStorageLimits(pod('a', { volumes: [{ name: 'v', emptyDir: { sizeLimit: '1Gi' } }] })), true);
    assert.equal(hasLocalStorageLimits(pod('a', { initContainers: [{ name: 'i', resources: { limits: { 'ephemeral-storage': '1Gi' } } }] })), true);
  });
});

describe('local storage limits: the manager', () => {
  it('evicts every pod over a limit in one round, with no threshold met: grace 1, no DisruptionTarget, the event; critical pods spared', async () => {
    const clock = createFakeClock();
    const kills: { name: string; kill: NodeKill }[] = [];
    const events: string[] = [];
    const signals: string[] = [];
    const limited = { volumes: [{ name: 'v', emptyDir: { sizeLimit: '1Mi' } }] };
    const pods = [pod('over', limited), pod('under', limited), pod('also-over', limited), pod('critical', { ...limited, priority: 2_000_001_000 })];
    const measured = new Map([['over', 2 * Mi], ['under', Mi], ['also-over', 3 * Mi], ['critical', 9 * Mi]]);
    let cleanupLooks = 0;
    const manager = new EvictionManager({
      config: DEFAULT_EVICTION,
      observe: () => Promise.resolve(new Map([['memory.available', { available: 4096 * Mi, capacity: 8192 * Mi }]])),
      activePods: () => pods,
      usage: () => Promise.reject(new Error('no pressure: the ranking must not be read')),
      localStorage: (active) => Promise.resolve({ usage: active.map((p) => usage(p, { emptyDirBytes: new Map([['v', measured.get(p.metadata?.name ?? '') ?? 0]]) })), dedicatedImageFs: false }),
      reclaimer: { runContainerGcNow: () => Promise.resolve(true), runImageGcNow: () => Promise.resolve(true) },
      evict: (key, kill) => {
        kills.push({ name: key.name, kill });
        return true;
      },
      podCleanedUp: () => {
        cleanupLooks += 1;
        return true;
      },
      recordEvent: (_p, message) => events.push(message),
      onEvicted: (signal) => signals.push(signal),
      onConditionsChanged: () => undefined,
      clock,
      logger: pino({ level: 'silent' }),
    });
    assert.equal((await manager.synchronize())?.metadata?.name, 'over');
    assert.deepEqual(kills, [
      { name: 'over', kill: { reason: 'Evicted', message: 'Usage of EmptyDir volume "v" exceeds the limit "1Mi". ', gracePeriodSeconds: 1, disruptionTarget: false } },
      { name: 'also-over', kill: { reason: 'Evicted', message: 'Usage of EmptyDir volume "v" exceeds the limit "1Mi". ', gracePeriodSeconds: 1, disruptionTarget: false } },
    ]);
    assert.deepEqual(events, ['Usage of EmptyDir volume "v" exceeds the limit "1Mi". ', 'Usage of EmptyDir volume "v" exceeds the limit "1Mi". ']);
    assert.deepEqual(signals, ['emptydirfs.limit', 'emptydirfs.limit']);
    assert.equal(cleanupLooks, 2, 'the round waits for each victim');
    assert.deepEqual(manager.conditions(), []);
  });
});

describe('local storage limits: reading usage', () => {
  let root = '';
  before(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'nodelet-localstorage-'));
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('measures every emptyDir, counts disk emptyDirs, configMaps, layers and logs for the pod, and skips pods without limits', async () => {
    const p = pod('a', {
      volumes: [{ name: 'disk', emptyDir: { sizeLimit: '1Mi' } }, { name: 'ram', emptyDir: { medium: 'Memory' } }, { name: 'cfg', configMap: { name: 'c' } }],
    });
    const volumes = path.join(root, 'pods', 'uid-a', 'volumes');
    await mkdir(path.join(volumes, 'kubernetes.io~empty-dir', 'disk'), { recursive: true });
    await writeFile(path.join(volumes, 'kubernetes.io~empty-dir', 'disk', 'f'), Buffer.alloc(2 * Mi, 1));
    await mkdir(path.join(volumes, 'kubernetes.io~empty-dir', 'ram'), { recursive: true });
    await writeFile(path.join(volumes, 'kubernetes.io~empty-dir', 'ram', 'f'), Buffer.alloc(Mi, 1));
    await mkdir(path.join(volumes, 'kubernetes.io~configmap', 'cfg'), { recursive: true });
    await writeFile(path.join(volumes, 'kubernetes.io~configmap', 'cfg', 'k'), Buffer.alloc(Mi, 1));
    const logs = path.join(root, 'logs', 'ns_a_uid-a', 'main');
    await mkdir(logs, { recursive: true });
    await writeFile(path.join(logs, '0.log'), Buffer.alloc(Mi, 1));
    const stats = [{ labels: { 'io.kubernetes.pod.uid': 'uid-a', 'io.kubernetes.container.name': 'main' }, writableLayer: { usedBytes: BigInt(3 * Mi) } }];
    const sources = { listContainerStats: () => Promise.resolve(stats as never), rootDir: root, podLogDir: path.join(root, 'logs') };
    const [read, ...rest] = await readLocalStorageUsage(sources, [p, pod('unlimited')]);
    assert.equal(rest.length, 0, 'a pod without limits is not measured');
    const disk = read?.emptyDirBytes.get('disk') ?? 0;
    const ram = read?.emptyDirBytes.get('ram') ?? 0;
    assert.ok(disk >= 2 * Mi && ram >= Mi, `emptyDirs measured: ${disk}, ${ram}`);
    const logsBytes = read?.containers[0]?.logsBytes ?? 0;
    assert.deepEqual(read?.containers.map((c) => [c.name, c.rootfsBytes]), [['main', 3 * Mi]]);
    assert.ok(logsBytes >= Mi, `logs measured: ${logsBytes}`);
    const configMap = (await measureDir(path.join(volumes, 'kubernetes.io~configmap', 'cfg'))).usedBytes;
    assert.equal(read?.podBytes, disk + configMap + 3 * Mi + logsBytes, 'the pod: disk emptyDir, configMap, layer, logs; never the tmpfs');
  });
});
