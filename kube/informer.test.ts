import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesListObject, V1Pod } from '@kubernetes/client-node';
import { KubeApiError } from '../util/api-errors.js';
import { createFakeClock, settle } from '../test/doubles/fake-clock.js';
import { ListWatchInformer, type WatchSource } from './informer.js';
import type { Query, WatchHandlers } from './transport.js';

const pod = (name: string, rv: string, namespace = 'default'): V1Pod => ({ metadata: { name, namespace, resourceVersion: rv } });

/** A watch source whose watches the test drives by hand. */
class ScriptedWatches implements WatchSource {
  readonly opened: { query: Query; handlers: WatchHandlers; aborted: boolean }[] = [];

  watch(_path: string, query: Query, handlers: WatchHandlers): Promise<AbortController> {
    const entry = { query, handlers, aborted: false };
    this.opened.push(entry);
    const controller = new AbortController();
    controller.signal.addEventListener('abort', () => (entry.aborted = true));
    return Promise.resolve(controller);
  }

  last(): { query: Query; handlers: WatchHandlers; aborted: boolean } {
    const w = this.opened.at(-1);
    assert.ok(w !== undefined, 'no watch opened');
    return w;
  }
}

function setup(lists: (() => KubernetesListObject<V1Pod>)[], random: () => number = () => 0) {
  const clock = createFakeClock();
  const watches = new ScriptedWatches();
  let listed = 0;
  const informer = new ListWatchInformer<V1Pod>({
    path: '/api/v1/pods',
    list: () => {
      const next = lists[Math.min(listed, lists.length - 1)];
      listed += 1;
      return next === undefined ? Promise.reject(new Error('no list')) : Promise.resolve().then(next);
    },
    watch: watches,
    fieldSelector: 'spec.nodeName=n1',
    clock,
    random,
  });
  const seen: string[] = [];
  informer.on('add', (p) => seen.push(`add ${p.metadata?.name ?? ''}@${p.metadata?.resourceVersion ?? ''}`));
  informer.on('update', (p) => seen.push(`update ${p.metadata?.name ?? ''}@${p.metadata?.resourceVersion ?? ''}`));
  informer.on('delete', (p) => seen.push(`delete ${p.metadata?.name ?? ''}`));
  informer.on('error', (err) => seen.push(`error ${err instanceof Error ? err.message : String(err)}`));
  return { clock, watches, informer, seen, listCount: () => listed };
}

describe('ListWatchInformer', () => {
  it('lists, then watches from the list version with its selector, and keeps its cache by namespace and name', async () => {
    const { watches, informer, seen } = setup([() => ({ metadata: { resourceVersion: '10' }, items: [pod('a', '9'), pod('b', '8', 'kube-system')] })]);
    await informer.start();
    assert.deepEqual(watches.last().query, { resourceVersion: '10', fieldSelector: 'spec.nodeName=n1' });
    const w = watches.last().handlers;
    w.onEvent('MODIFIED', pod('a', '11'));
    w.onEvent('MODIFIED', pod('a', '11'));
    w.onEvent('ADDED', pod('c', '12'));
    w.onEvent('DELETED', pod('b', '13', 'kube-system'));
    w.onEvent('BOOKMARK', { metadata: { resourceVersion: '14' } });
    assert.deepEqual(seen, ['add a@9', 'add b@8', 'update a@11', 'add c@12', 'delete b']);
    assert.deepEqual(informer.list().map((p) => p.metadata?.name), ['a', 'c']);
    assert.equal(informer.get('a', 'default')?.metadata?.resourceVersion, '11');
    assert.equal(informer.get('b', 'kube-system'), undefined);
    assert.equal(informer.latestResourceVersion(), '14');
    await informer.stop();
    assert.equal(watches.last().aborted, true);
  });

  it('reopens an ended watch from the last version at once after an event; after a quiet one waits 1 s, doubling', async () => {
    const { clock, watches, informer } = setup([() => ({ metadata: { resourceVersion: '10' }, items: [] })]);
    await informer.start();
    watches.last().handlers.onEvent('BOOKMARK', { metadata: { resourceVersion: '20' } });
    watches.last().handlers.onDone(undefined);
    await settle();
    assert.equal(watches.opened.length, 2, 'a watch that delivered an event reopens at once');
    assert.equal(watches.last().query.resourceVersion, '20');
    watches.last().handlers.onDone(undefined);
    await settle();
    assert.equal(watches.opened.length, 2, 'a watch that ended without an event waits');
    await clock.advance(999);
    assert.equal(watches.opened.length, 2);
    await clock.advance(1);
    assert.equal(watches.opened.length, 3, '1 s');
    watches.last().handlers.onDone(undefined);
    await clock.advance(1999);
    assert.equal(watches.opened.length, 3);
    await clock.advance(1);
    assert.equal(watches.opened.length, 4, 'then 2 s');
    await informer.stop();
  });

  it('spreads the wait after a quiet watch over [d, 2d) with the random source (jitter 1.0, as client-go)', async () => {
    const draws = [0.5, 0.25];
    const { clock, watches, informer } = setup([() => ({ metadata: { resourceVersion: '10' }, items: [] })], () => draws.shift() ?? 0);
    await informer.start();
    watches.last().handlers.onDone(undefined);
    await settle();
    assert.equal(watches.opened.length, 2, 'the first end reopens at once, drawing nothing');
    watches.last().handlers.onDone(undefined);
    await settle();
    assert.equal(clock.nextTimerIn(), 1500, '1 s spread by 0.5');
    await clock.advance(1500);
    assert.equal(watches.opened.length, 3);
    watches.last().handlers.onDone(undefined);
    await settle();
    assert.equal(clock.nextTimerIn(), 2500, '2 s spread by 0.25');
    await informer.stop();
  });

  it('relists after 410 Gone, after a jittered 1–2 s, and reports what the new list lacks as deleted', async () => {
    const { clock, watches, informer, seen, listCount } = setup(
      [() => ({ metadata: { resourceVersion: '10' }, items: [pod('a', '1'), pod('b', '2')] }), () => ({ metadata: { resourceVersion: '30' }, items: [pod('b', '3')] })],
      () => 0.4,
    );
    await informer.start();
    watches.last().handlers.onDone(new KubeApiError(410, { code: 410 }, 'WATCH /api/v1/pods'));
    await settle();
    await clock.advance(1399);
    assert.equal(listCount(), 1, 'not at once: an API server restart expires every node\'s watch together');
    await clock.advance(1);
    assert.equal(listCount(), 2, '1 s × (1 + 0.4)');
    assert.deepEqual(seen, ['add a@1', 'add b@2', 'delete a', 'update b@3']);
    assert.equal(watches.last().query.resourceVersion, '30');
    await informer.stop();
  });

  it('relists after a 410 ERROR event in the stream, once the server ends that watch', async () => {
    const { clock, watches, informer, listCount } = setup([
      () => ({ metadata: { resourceVersion: '10' }, items: [pod('a', '1')] }),
      () => ({ metadata: { resourceVersion: '40' }, items: [pod('a', '1')] }),
    ]);
    await informer.start();
    watches.last().handlers.onEvent('ERROR', { kind: 'Status', code: 410, reason: 'Expired' });
    assert.equal(informer.latestResourceVersion(), '');
    watches.last().handlers.onDone(undefined);
    await settle();
    assert.equal(listCount(), 1);
    await clock.advance(1000);
    assert.equal(listCount(), 2);
    assert.equal(watches.last().query.resourceVersion, '40');
    await informer.stop();
  });

  it('reports a failed list or watch to its error handlers and stops there', async () => {
    const { watches, informer, seen } = setup([() => ({ metadata: { resourceVersion: '10' }, items: [] })]);
    await informer.start();
    watches.last().handlers.onDone(new KubeApiError(403, { code: 403 }, 'WATCH /api/v1/pods'));
    await settle();
    assert.deepEqual(seen, ['error WATCH /api/v1/pods: HTTP 403']);
    assert.equal(watches.opened.length, 1, 'no reconnect after an error: the owner restarts it');
    const failing = setup([]);
    await failing.informer.start();
    assert.deepEqual(failing.seen, ['error no list']);
    assert.equal(failing.watches.opened.length, 0);
  });

  it('ignores a watch that ends after stop(), and a stop during the list leaves no watch open', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const clock = createFakeClock();
    const watches = new ScriptedWatches();
    const informer = new ListWatchInformer<V1Pod>({ path: '/api/v1/pods', list: () => gate.then(() => ({ metadata: { resourceVersion: '1' }, items: [] })), watch: watches, clock });
    const started = informer.start();
    await informer.stop();
    release();
    await started;
    assert.equal(watches.opened.length, 0);
    assert.deepEqual(informer.list(), []);
  });
});
