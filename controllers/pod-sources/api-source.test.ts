import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ErrorCallback, Informer, KubernetesListObject, ListPromise, ObjectCallback, V1Pod } from '@kubernetes/client-node';
import { unusedKubeClient } from '../../test/doubles/kube-client.js';
import { pino } from 'pino';
import { createFakeClock, settle } from '../../test/doubles/fake-clock.js';
import { createPodSource, isStaleInformerError } from './api-source.js';
import type { PodKey } from '../../util/pod-key.js';
import type { PodTransport } from './pod-watch.js';
import { podEventsTo } from '../../test/doubles/pod-events.js';

type Verb = 'add' | 'update' | 'delete' | 'change' | 'error' | 'connect';

/** Behaves like client-node's ListWatch as far as the pod source can tell. */
class FakeInformer implements Informer<V1Pod> {
  readonly objectCallbacks = new Map<string, ObjectCallback<V1Pod>[]>();
  readonly errorCallbacks: ErrorCallback[] = [];
  readonly cache = new Map<string, V1Pod>();
  stopped = false;
  startError: unknown;

  constructor(
    private readonly listPods: ListPromise<V1Pod>,
    readonly onActivity: () => void,
  ) {}

  on(verb: Verb, cb: ObjectCallback<V1Pod> | ErrorCallback): void {
    if (verb === 'error' || verb === 'connect') this.errorCallbacks.push(cb as ErrorCallback);
    else this.objectCallbacks.set(verb, [...(this.objectCallbacks.get(verb) ?? []), cb as ObjectCallback<V1Pod>]);
  }

  off(): void {
    throw new Error('not used');
  }

  async start(): Promise<void> {
    let list: KubernetesListObject<V1Pod>;
    try {
      list = await this.listPods();
    } catch (err: unknown) {
      this.startError = err;
      this.fail(err);
      return;
    }
    for (const [key, old] of this.cache) {
      if (!list.items.some((p) => keyOf(p) === key)) this.emit('delete', old);
    }
    for (const item of list.items) this.emit(this.cache.has(keyOf(item)) ? 'update' : 'add', item);
    this.onActivity();
  }

  stop(): Promise<void> {
    this.stopped = true;
    return Promise.resolve();
  }

  emit(verb: 'add' | 'update' | 'delete', pod: V1Pod): void {
    if (verb === 'delete') this.cache.delete(keyOf(pod));
    else this.cache.set(keyOf(pod), pod);
    for (const cb of this.objectCallbacks.get(verb) ?? []) cb(pod);
  }

  fail(err: unknown): void {
    for (const cb of this.errorCallbacks) cb(err);
  }
}

const keyOf = (p: V1Pod): string => `${p.metadata?.namespace ?? ''}/${p.metadata?.name ?? ''}`;

function pod(name: string, uid: string, resourceVersion = '1', labels?: Record<string, string>): V1Pod {
  return { metadata: { name, namespace: 'ns', uid, resourceVersion, labels }, spec: { nodeName: 'n1', containers: [] } };
}

function setup(initial: V1Pod[] = [], random: () => number = () => 0) {
  const clock = createFakeClock(0);
  const server = { pods: initial, listError: undefined as Error | undefined, getError: undefined as Error | undefined, lists: 0, listGate: undefined as Promise<void> | undefined };
  const informers: FakeInformer[] = [];
  const transport: PodTransport = {
    list: async () => {
      server.lists += 1;
      await server.listGate;
      if (server.listError) throw server.listError;
      return { items: [...server.pods], metadata: { resourceVersion: String(server.lists) } };
    },
    get: (namespace: string, name: string) => {
      if (server.getError) return Promise.reject(server.getError);
      return Promise.resolve(server.pods.find((p) => p.metadata?.namespace === namespace && p.metadata.name === name));
    },
    informer: ({ listPods, onActivity }) => {
      const informer = new FakeInformer(listPods, onActivity);
      informers.push(informer);
      return informer;
    },
  };
  const events: [string, string][] = [];
  const source = createPodSource({
    kube: unusedKubeClient(),
    nodeName: 'n1',
    logger: pino({ level: 'silent' }),
    podEvents: podEventsTo((ref: PodKey, reason) => events.push([ref.uid, reason])),
    clock,
    silenceTimeoutMs: 60_000,
    transport,
    // 0 unless a test says otherwise: the delays are the backoff's own (the jitter has its own test).
    random,
  });
  const current = (): FakeInformer => informers.at(-1)!;
  return { clock, server, informers, current, events, source };
}

describe('pod source', () => {
  it('lists on start, reports every listed pod as relisted and serves them by UID', async () => {
    const { source, events } = setup([pod('a', 'u1'), pod('b', 'u2')]);
    assert.equal(source.synced(), false);
    await source.start();
    assert.deepEqual(events, [
      ['u1', 'relisted'],
      ['u2', 'relisted'],
    ]);
    assert.equal(source.get('u2')?.metadata?.name, 'b');
    assert.equal(source.list().length, 2);
    assert.equal(source.synced(), true);
    assert.equal(source.healthy(), true);
    source.stop();
  });

  it('confirms a pod absent only when the API server itself has no pod with its UID, and never when it cannot be asked', async () => {
    const { source, server } = setup([pod('a', 'u1')]);
    await source.start();
    const confirm = (key: PodKey): Promise<boolean> => source.confirmAbsent!(key);
    assert.equal(await confirm({ uid: 'u1', namespace: 'ns', name: 'a' }), false, 'the API still has it');
    assert.equal(await confirm({ uid: 'old', namespace: 'ns', name: 'a' }), true, 'another pod under the name');
    assert.equal(await confirm({ uid: 'u9', namespace: 'ns', name: 'gone' }), true, 'NotFound');
    server.getError = new Error('connection refused');
    assert.equal(await confirm({ uid: 'u9', namespace: 'ns', name: 'gone' }), false, 'an unreachable API confirms nothing');
    source.stop();
  });

  it('with only a UID known (an orphaned pod directory) lists the node’s pods and confirms the UID absent only when none has it', async () => {
    const { source, server } = setup([pod('a', 'u1')]);
    await source.start();
    const confirm = (uid: string): Promise<boolean> => source.confirmAbsent!({ uid, namespace: '', name: '' });
    assert.equal(await confirm('u1'), false, 'the API still has a pod with the UID');
    assert.equal(await confirm('u9'), true, 'no pod of the node has the UID');
    server.listError = new Error('connection refused');
    assert.equal(await confirm('u9'), false, 'an unreachable API confirms nothing');
    source.stop();
  });

  it('maps add, update and delete events to UIDs and keeps the latest object', async () => {
    const { source, events, current } = setup();
    await source.start();
    current().emit('add', pod('a', 'u1', '1'));
    current().emit('update', pod('a', 'u1', '2', { tier: 'web' }));
    current().emit('update', pod('a', 'u1', '2', { tier: 'web' }));
    assert.deepEqual(source.get('u1')?.metadata?.labels, { tier: 'web' });
    current().emit('delete', pod('a', 'u1', '3'));
    assert.equal(source.get('u1'), undefined);
    assert.deepEqual(events, [
      ['u1', 'added'],
      ['u1', 'updated'],
      ['u1', 'deleted'],
    ]);
    source.stop();
  });

  it('reports a status-only update as such, but as readiness-gate-changed when the written Ready no longer matches the gates', async () => {
    const { source, events, current } = setup();
    await source.start();
    const gated = (resourceVersion: string, gate: string | undefined, ready: string): V1Pod => {
      const p = pod('a', 'u1', resourceVersion);
      p.spec = { containers: [{ name: 'app', image: 'busybox' }], readinessGates: [{ conditionType: 'example.com/lb' }] };
      const gateCondition = gate === undefined ? [] : [{ type: 'example.com/lb', status: gate }];
      const message = gate === undefined ? 'corresponding condition of pod readiness gate "example.com/lb" does not exist.' : undefined;
      p.status = {
        phase: 'Running',
        containerStatuses: [{ name: 'app', image: 'busybox', imageID: '', restartCount: 0, ready: true }],
        conditions: [...gateCondition, { type: 'Ready', status: ready, ...(message === undefined ? {} : { message }) }],
      };
      return p;
    };
    current().emit('add', gated('1', undefined, 'False'));
    current().emit('update', gated('2', undefined, 'False')); // nodelet's own write echoed
    current().emit('update', gated('3', 'True', 'False')); // a controller set the gate
    current().emit('update', gated('4', 'True', 'True')); // nodelet's Ready echoed
    assert.deepEqual(events, [
      ['u1', 'added'],
      ['u1', 'status-updated'],
      ['u1', 'readiness-gate-changed'],
      ['u1', 'status-updated'],
    ]);
    source.stop();
  });

  it('reports a status-only update that shows the pod evicted as evicted-status-synced (its dead containers go), other terminal statuses as status-updated', async () => {
    const { source, events, current } = setup();
    await source.start();
    const withStatus = (resourceVersion: string, status: V1Pod['status']): V1Pod => ({ ...pod('a', 'u1', resourceVersion), status });
    current().emit('add', withStatus('1', { phase: 'Running' }));
    current().emit('update', withStatus('2', { phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: memory. ' }));
    current().emit('update', withStatus('3', { phase: 'Failed', reason: 'DeadlineExceeded' }));
    assert.deepEqual(events, [
      ['u1', 'added'],
      ['u1', 'evicted-status-synced'],
      ['u1', 'status-updated'],
    ]);
    source.stop();
  });

  it('restarts a failed informer after 1 s with a full relist, reporting pods deleted meanwhile as vanished', async () => {
    const { source, events, informers, current, server, clock } = setup([pod('a', 'u1'), pod('b', 'u2')]);
    await source.start();
    events.length = 0;
    current().fail(Object.assign(new Error('watch failed'), { statusCode: 500 }));
    assert.equal(source.healthy(), false);
    assert.equal(informers[0]!.stopped, true);
    server.pods = [pod('b', 'u2', '7')];
    await clock.advance(999);
    assert.equal(informers.length, 1);
    await clock.advance(1);
    assert.equal(informers.length, 2);
    assert.deepEqual(events, [
      ['u1', 'vanished'],
      ['u2', 'relisted'],
    ]);
    assert.equal(source.get('u1'), undefined);
    assert.equal(source.get('u2')?.metadata?.resourceVersion, '7');
    assert.equal(source.healthy(), true);
    source.stop();
  });

  it('backs off 1 s, 2 s, 4 s … capped at 30 s while the API server keeps failing', async () => {
    const { source, informers, server, clock } = setup();
    server.listError = new TypeError('fetch failed');
    await source.start();
    const startedAt: number[] = [];
    for (let t = 0; t < 100_000; t += 500) {
      const before = informers.length;
      await clock.advance(500);
      if (informers.length > before) startedAt.push(clock.now());
    }
    assert.deepEqual(startedAt.slice(0, 7), [1000, 3000, 7000, 15_000, 31_000, 61_000, 91_000]);
    assert.equal(source.synced(), false);
    server.listError = undefined;
    await clock.advance(30_000);
    assert.equal(source.healthy(), true);
    source.stop();
  });

  it('spreads each restart over [d, 2d) by the random source, so agents that failed together relist apart', async () => {
    const { source, informers, server, clock } = setup([], () => 0.5);
    server.listError = new TypeError('fetch failed');
    await source.start();
    const startedAt: number[] = [];
    for (let t = 0; t < 100_000; t += 500) {
      const before = informers.length;
      await clock.advance(500);
      if (informers.length > before) startedAt.push(clock.now());
    }
    // 1 s, 2 s, 4 s, 8 s, 16 s, 30 s (the cap), each × 1.5.
    assert.deepEqual(startedAt.slice(0, 6), [1500, 4500, 10_500, 22_500, 46_500, 91_500]);
    source.stop();
  });

  it('backs off exponentially in an outage that starts after a long healthy period', async () => {
    const { source, informers, current, server, clock } = setup([pod('a', 'u1')]);
    await source.start();
    await clock.advance(50_000);
    current().onActivity();
    server.listError = new TypeError('fetch failed: connect ECONNREFUSED');
    current().fail(new TypeError('fetch failed: connect ECONNREFUSED'));
    const failedAt = clock.now();
    const startedAfter: number[] = [];
    for (let t = 0; t < 20_000; t += 250) {
      const before = informers.length;
      await clock.advance(250);
      if (informers.length > before) startedAfter.push(clock.now() - failedAt);
    }
    assert.deepEqual(startedAfter, [1000, 3000, 7000, 15_000]);
    source.stop();
  });

  it('sees a pod re-created under the same name during an outage as the old UID vanished', async () => {
    const { source, events, current, server, clock } = setup([pod('a', 'u1')]);
    await source.start();
    events.length = 0;
    current().fail(new Error('connection reset'));
    server.pods = [pod('a', 'u9', '20')];
    await clock.advance(1000);
    assert.deepEqual(events, [
      ['u1', 'vanished'],
      ['u9', 'relisted'],
    ]);
    source.stop();
  });

  it('reports a relist the informer does on its own (after 410 Gone) the same level-triggered way', async () => {
    const { source, events, current, server } = setup([pod('a', 'u1'), pod('b', 'u2')]);
    await source.start();
    events.length = 0;
    server.pods = [pod('b', 'u2'), pod('c', 'u3')];
    await current().start();
    assert.deepEqual(events, [
      ['u1', 'vanished'],
      ['u2', 'relisted'],
      ['u3', 'relisted'],
    ]);
  });

  it('replaces a watch that showed no sign of life for the silence timeout', async () => {
    const { source, informers, current, clock } = setup([pod('a', 'u1')]);
    await source.start();
    await clock.advance(45_000);
    current().onActivity();
    await clock.advance(45_000);
    assert.equal(informers.length, 1, 'activity at 45 s keeps the watch');
    assert.equal(source.healthy(), true);
    await clock.advance(30_000);
    assert.equal(informers.length, 2);
    assert.equal(informers[0]!.stopped, true);
    assert.equal(source.healthy(), true);
    source.stop();
  });

  it('drops events from an informer it has replaced', async () => {
    const { source, events, informers, clock } = setup();
    await source.start();
    informers[0]!.fail(new Error('boom'));
    await clock.advance(1000);
    events.length = 0;
    informers[0]!.emit('add', pod('ghost', 'u-ghost'));
    assert.equal(source.get('u-ghost'), undefined);
    assert.deepEqual(events, []);
    source.stop();
  });

  it('refuses a list that returns after its informer was replaced, so it never watches', async () => {
    const { source, informers, server, clock } = setup([pod('a', 'u1')]);
    let release: () => void = () => undefined;
    server.listGate = new Promise<void>((resolve) => (release = resolve));
    const started = source.start();
    await settle();
    // Nothing answers for the silence timeout: the watchdog launches a second informer.
    await clock.advance(75_000);
    assert.equal(informers.length, 2);
    release();
    await started;
    await settle();
    assert.ok(isStaleInformerError(informers[0]!.startError));
    assert.equal(source.get('u1')?.metadata?.name, 'a');
    source.stop();
  });

  it('reports every known pod on resyncAll', async () => {
    const { source, events } = setup([pod('a', 'u1'), pod('b', 'u2')]);
    await source.start();
    events.length = 0;
    source.resyncAll();
    assert.deepEqual(events, [
      ['u1', 'resync'],
      ['u2', 'resync'],
    ]);
    source.stop();
  });

  it('keeps delivering when the onPod handler throws', async () => {
    const { clock } = setup();
    const seen: string[] = [];
    const source = createPodSource({
      kube: unusedKubeClient(),
      nodeName: 'n1',
      logger: pino({ level: 'silent' }),
      podEvents: podEventsTo((ref) => {
        seen.push(ref.uid);
        throw new Error('queue exploded');
      }),
      clock,
      transport: {
        list: () => Promise.resolve({ items: [pod('a', 'u1'), pod('b', 'u2')] }),
        get: () => Promise.resolve(undefined),
        informer: ({ listPods, onActivity }) => new FakeInformer(listPods, onActivity),
      },
    });
    await source.start();
    assert.deepEqual(seen, ['u1', 'u2']);
    source.stop();
  });

  it('never restarts once stopped', async () => {
    const { source, informers, current, clock } = setup();
    await source.start();
    const informer = current();
    source.stop();
    informer.fail(new Error('late error'));
    await clock.advance(120_000);
    assert.equal(informers.length, 1);
    assert.equal(source.healthy(), false);
    assert.equal(clock.pendingTimers(), 0);
  });
});
