/**
 * The eviction manager over fakes: observations and usage as plain data, the kill path and GC
 * recorded. Checks the synchronize round: conditions, reclaim first for disk, one victim per round
 * in the kubelet's order with its grace period, critical pods spared, live settings.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { NodeKill } from '../../reconcilers/lifecycle/evictions.js';
import type { PodKey } from '../../util/pod-key.js';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { NodePressureState } from './node-pressure-state.js';
import { EvictionManager } from './eviction-manager.js';
import type { PodUsage } from './ranking.js';
import type { Observations, PressureCondition } from './signals.js';
import { DEFAULT_EVICTION, type EvictionConfig } from './thresholds.js';

const Mi = 2 ** 20;
const GiB = 2 ** 30;

function pod(name: string, extra: Partial<NonNullable<V1Pod['spec']>> = {}, annotations?: Record<string, string>): V1Pod {
  return { metadata: { name, namespace: 'ns', uid: `uid-${name}`, ...(annotations === undefined ? {} : { annotations }) }, spec: { containers: [{ name: 'main' }], terminationGracePeriodSeconds: 30, ...extra } };
}

interface Fixture {
  manager: EvictionManager;
  observed: { memory: number; nodefs: number };
  pods: V1Pod[];
  usage: Map<string, { memory: number; volume: number }>;
  kills: { key: PodKey; kill: NodeKill }[];
  conditions: (readonly PressureCondition[])[];
  gc: string[];
  evictedSignals: string[];
  clock: ReturnType<typeof createFakeClock>;
  /** Runs after each GC call (a test that lets GC free space). */
  afterGc?: () => void;
}

function fixture(config: Partial<EvictionConfig> = {}, pressure?: NodePressureState): Fixture {
  const clock = createFakeClock();
  const f: Omit<Fixture, 'manager'> & { manager?: EvictionManager } = { observed: { memory: 4 * GiB, nodefs: 50 * GiB }, pods: [], usage: new Map(), kills: [], conditions: [], gc: [], evictedSignals: [], clock };
  const observe = (): Promise<Observations> =>
    Promise.resolve(
      new Map([
        ['memory.available', { available: f.observed.memory, capacity: 8 * GiB }],
        ['nodefs.available', { available: f.observed.nodefs, capacity: 100 * GiB }],
      ]),
    );
  const decided = new Set<string>();
  f.manager = new EvictionManager({
    config: { ...DEFAULT_EVICTION, ...config },
    observe,
    activePods: () => f.pods.filter((p) => !decided.has(p.metadata?.uid ?? '')),
    usage: (pods) => Promise.resolve(pods.map((p): PodUsage => ({ pod: p, containers: [{ name: 'main', memoryWorkingSetBytes: f.usage.get(p.metadata?.name ?? '')?.memory ?? 0 }], volumeBytes: f.usage.get(p.metadata?.name ?? '')?.volume ?? 0 }))),
    reclaimer: {
      runContainerGcNow: () => {
        f.gc.push('containers');
        f.afterGc?.();
        return Promise.resolve(true);
      },
      runImageGcNow: () => {
        f.gc.push('images');
        f.afterGc?.();
        return Promise.resolve(true);
      },
    },
    evict: (key, kill) => {
      if (decided.has(key.uid)) return false;
      decided.add(key.uid);
      f.kills.push({ key, kill });
      return true;
    },
    onConditionsChanged: (c) => f.conditions.push(c),
    onEvicted: (signal) => f.evictedSignals.push(signal),
    clock,
    logger: pino({ level: 'silent' }),
    ...(pressure === undefined ? {} : { pressure }),
  });
  return f as Fixture;
}

describe('eviction manager', () => {
  it('does nothing and raises nothing while no threshold is met', async () => {
    const f = fixture();
    f.pods.push(pod('a'));
    assert.equal(await f.manager.synchronize(), undefined);
    assert.deepEqual(f.kills, []);
    assert.deepEqual(f.conditions, []);
    assert.deepEqual(f.manager.conditions(), []);
  });

  it('under a hard memory threshold: MemoryPressure, then one pod per round, the hungriest BestEffort first, grace 0, critical pods spared', async () => {
    const f = fixture({ hard: { 'memory.available': '1Gi' } });
    f.pods.push(pod('guaranteed'), pod('hungry'), pod('static', {}, { 'kubernetes.io/config.source': 'file' }), pod('critical', { priority: 2_000_001_000 }));
    f.pods[0] = { ...pod('guaranteed'), spec: { containers: [{ name: 'main', resources: { requests: { memory: '512Mi' }, limits: { memory: '512Mi' } } }] } };
    f.usage.set('guaranteed', { memory: 100 * Mi, volume: 0 });
    f.usage.set('hungry', { memory: 300 * Mi, volume: 0 });
    f.usage.set('static', { memory: 900 * Mi, volume: 0 });
    f.usage.set('critical', { memory: 900 * Mi, volume: 0 });
    f.observed.memory = 800 * Mi;
    const first = await f.manager.synchronize();
    assert.equal(first?.metadata?.name, 'hungry');
    assert.deepEqual(f.conditions, [['MemoryPressure']]);
    assert.deepEqual(f.kills[0]?.kill, {
      reason: 'Evicted',
      message: 'The node was low on resource: memory. Threshold quantity: 1Gi, available: 800Mi. Container main was using 300Mi, request is 0, has larger consumption of memory. ',
      gracePeriodSeconds: 0,
    });
    assert.deepEqual(f.evictedSignals, ['memory.available']);
    // Still short of memory: the next round takes the next pod; static and critical pods never go.
    await f.clock.advance(10_000);
    assert.equal((await f.manager.synchronize())?.metadata?.name, 'guaranteed');
    await f.clock.advance(10_000);
    assert.equal(await f.manager.synchronize(), undefined);
    assert.deepEqual(f.kills.map((k) => k.key.name), ['hungry', 'guaranteed']);
    assert.deepEqual(f.gc, [], 'memory pressure does not run the GC');
  });

  it('for disk: container and image GC first, and no eviction when they relieved the pressure', async () => {
    const f = fixture({ hard: { 'nodefs.available': '10Gi' } });
    f.pods.push(pod('filler'));
    f.usage.set('filler', { memory: 0, volume: 600 * Mi });
    f.observed.nodefs = 9 * GiB;
    // The GC frees enough: the next observation reads more available.
    f.afterGc = () => {
      f.observed.nodefs = 11 * GiB;
    };
    assert.equal(await f.manager.synchronize(), undefined);
    assert.deepEqual(f.gc, ['containers', 'images']);
    assert.deepEqual(f.kills, []);
    assert.deepEqual(f.manager.conditions(), ['DiskPressure']);
  });

  it('for disk: evicts the pod using the most local storage when the GC did not help', async () => {
    const f = fixture({ hard: { 'nodefs.available': '10%' } });
    f.pods.push(pod('quiet'), pod('filler'));
    f.usage.set('filler', { memory: 0, volume: 600 * Mi });
    f.observed.nodefs = 9 * GiB;
    assert.equal((await f.manager.synchronize())?.metadata?.name, 'filler');
    assert.deepEqual(f.gc, ['containers', 'images']);
    assert.equal(f.kills[0]?.kill.message, 'The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 9Gi. ');
  });

  it('soft thresholds wait out their grace period and give maxPodGracePeriodSeconds (at most the pod\'s own)', async () => {
    const f = fixture({ hard: {}, soft: { 'memory.available': '2Gi' }, softGracePeriod: { 'memory.available': '30s' }, maxPodGracePeriodSeconds: 60 });
    f.pods.push(pod('a', { terminationGracePeriodSeconds: 45 }));
    f.usage.set('a', { memory: 300 * Mi, volume: 0 });
    f.observed.memory = GiB;
    assert.equal(await f.manager.synchronize(), undefined);
    assert.deepEqual(f.manager.conditions(), ['MemoryPressure']);
    await f.clock.advance(30_000);
    assert.equal((await f.manager.synchronize())?.metadata?.name, 'a');
    assert.equal(f.kills[0]?.kill.gracePeriodSeconds, 45);
  });

  it('waits for the evicted pod to be cleaned up before the round ends (at most 30 s)', async () => {
    const clock = createFakeClock();
    let cleanedUp = false;
    const manager = new EvictionManager({
      config: { ...DEFAULT_EVICTION, hard: { 'memory.available': '1Gi' } },
      observe: () => Promise.resolve(new Map([['memory.available', { available: 500 * Mi, capacity: 8 * GiB }]])),
      activePods: () => [pod('a'), pod('b')],
      usage: (pods) => Promise.resolve(pods.map((p) => ({ pod: p, containers: [], volumeBytes: 0 }))),
      reclaimer: { runContainerGcNow: () => Promise.resolve(true), runImageGcNow: () => Promise.resolve(true) },
      evict: () => true,
      podCleanedUp: () => cleanedUp,
      onConditionsChanged: () => undefined,
      clock,
      logger: pino({ level: 'silent' }),
    });
    let ended = false;
    const round = manager.synchronize().then((victim) => {
      ended = true;
      return victim;
    });
    await clock.advance(5000);
    assert.equal(ended, false, 'still waiting for the victim');
    cleanedUp = true;
    await clock.advance(1000);
    assert.equal((await round)?.metadata?.name, 'a');
    cleanedUp = false;
    const timedOut = manager.synchronize();
    await clock.advance(31_000);
    assert.equal((await timedOut)?.metadata?.name, 'a', 'gives up after 30 s');
    // Stopping the agent ends a wait at the next look.
    const stopped = manager.synchronize().then(() => true);
    await clock.advance(2000);
    await manager.stop();
    await clock.advance(1000);
    assert.equal(await stopped, true);
  });

  it('clears a condition after the transition period, and takes new settings live', async () => {
    const f = fixture({ hard: { 'memory.available': '1Gi' }, pressureTransitionPeriodSeconds: 20 });
    f.observed.memory = 800 * Mi;
    await f.manager.synchronize();
    f.observed.memory = 4 * GiB;
    await f.clock.advance(10_000);
    await f.manager.synchronize();
    assert.deepEqual(f.manager.conditions(), ['MemoryPressure']);
    await f.clock.advance(10_000);
    await f.manager.synchronize();
    assert.deepEqual(f.conditions, [['MemoryPressure'], []]);
    assert.deepEqual(f.manager.reservedBytes({ memoryBytes: 8 * GiB, ephemeralStorageBytes: 100 * GiB }), { memoryBytes: GiB, ephemeralStorageBytes: 0 });
    f.manager.setConfig({ ...DEFAULT_EVICTION, hard: { 'memory.available': '5Gi', 'nodefs.available': '10%' } });
    assert.deepEqual(f.manager.reservedBytes({ memoryBytes: 8 * GiB, ephemeralStorageBytes: 100 * GiB }), { memoryBytes: 5 * GiB, ephemeralStorageBytes: 10 * GiB });
    await f.manager.synchronize();
    assert.deepEqual(f.manager.conditions(), ['MemoryPressure']);
    await f.manager.stop();
  });

  it("tells the Node's pressure cell, made before it, its conditions and its thresholds", async () => {
    const config = { hard: { 'memory.available': '1Gi' } };
    const cell = NodePressureState.of({ ...DEFAULT_EVICTION, ...config });
    const capacity = { memoryBytes: 8 * GiB, ephemeralStorageBytes: 100 * GiB };
    assert.deepEqual(cell.reservedBytes(capacity), { memoryBytes: GiB, ephemeralStorageBytes: 0 }, 'the flags reserve before the manager exists');
    assert.deepEqual(cell.conditions(), []);
    const f = fixture(config, cell);
    f.observed.memory = 800 * Mi;
    await f.manager.synchronize();
    assert.deepEqual(cell.conditions(), ['MemoryPressure']);
    f.manager.setConfig({ ...DEFAULT_EVICTION, hard: { 'memory.available': '5Gi', 'nodefs.available': '10%' } });
    assert.deepEqual(cell.reservedBytes(capacity), { memoryBytes: 5 * GiB, ephemeralStorageBytes: 10 * GiB });
    await f.manager.stop();
  });
});
