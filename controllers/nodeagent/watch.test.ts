import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { pino } from 'pino';
import { createFakeClock, settle, type FakeClock } from '../../test/doubles/fake-clock.js';
import { apiError } from '../../test/doubles/fake-kube-api.js';
import { createFakeNodeAgentApi, type FakeNodeAgentApi } from '../../test/doubles/fake-nodeagent-api.js';
import type { NodeAgent } from './types.js';
import { createNodeAgentWatch, type NodeAgentWatch } from './watch.js';

interface Setup {
  readonly clock: FakeClock;
  readonly api: FakeNodeAgentApi;
  readonly seen: NodeAgent[];
  readonly watch: NodeAgentWatch;
}

let running: NodeAgentWatch | undefined;

function setup(prepare?: (api: FakeNodeAgentApi) => void, random: () => number = () => 0): Setup {
  const clock = createFakeClock();
  const api = createFakeNodeAgentApi();
  prepare?.(api);
  const seen: NodeAgent[] = [];
  const watch = createNodeAgentWatch({
    api,
    name: 'vm',
    clock,
    logger: pino({ level: 'silent' }),
    onObject: (agent) => seen.push(agent),
    relistPeriodMs: 60_000,
    // 0 unless a test says otherwise: the delays are the backoff's own.
    random,
  });
  running = watch;
  return { clock, api, seen, watch };
}

const specs = (seen: readonly NodeAgent[]): unknown[] => seen.map((a) => a.spec);

describe('NodeAgent watch', () => {
  afterEach(async () => {
    await running?.stop();
  });

  it('creates the NodeAgent when it is missing, delivers it, and watches it', async () => {
    const { api, seen, watch } = setup();
    watch.start();
    await settle();
    assert.deepEqual(api.calls, ['get', 'create', 'watch']);
    assert.equal(api.objects.get('vm')?.metadata.generation, 1);
    assert.deepEqual(specs(seen), [{}]);
    assert.equal(watch.healthy(), true);
  });

  it('adopts an existing NodeAgent and delivers each spec change from the watch', async () => {
    const { api, seen, watch } = setup((a) => void a.create({ apiVersion: 'nodelet.dev/v1alpha1', kind: 'NodeAgent', metadata: { name: 'vm' }, spec: { paused: true } }));
    watch.start();
    await settle();
    api.setSpec('vm', { paused: false });
    await settle();
    assert.deepEqual(api.calls.filter((c) => c === 'create'), ['create']);
    assert.deepEqual(specs(seen), [{ paused: true }, { paused: false }]);
    assert.equal(seen.at(-1)?.metadata.generation, 2);
  });

  it('watches again from the last version when the server closes the watch, without reading', async () => {
    const { api, seen, watch } = setup();
    watch.start();
    await settle();
    api.setSpec('vm', { maxPods: 5 });
    await settle();
    api.endWatches();
    await settle();
    assert.deepEqual(api.calls, ['get', 'create', 'watch', 'watch']);
    assert.equal(api.openWatches(), 1);
    assert.equal(seen.length, 2);
  });

  it('resumes from the version of the last bookmark or event when the server closes the watch', async () => {
    const { api, watch } = setup();
    watch.start();
    await settle();
    const created = api.objects.get('vm')?.metadata.resourceVersion;
    const bookmarked = api.bookmark();
    api.endWatches();
    await settle();
    api.setSpec('vm', { paused: true });
    const modified = api.objects.get('vm')?.metadata.resourceVersion;
    api.endWatches();
    await settle();
    assert.deepEqual(api.watchedFrom, [created, bookmarked, modified]);
  });

  it('backs off after errors while the API server is down and recovers without crashing', async () => {
    const { api, clock, seen, watch } = setup();
    api.failNext('get', new Error('connect ECONNREFUSED'), new Error('connect ECONNREFUSED'));
    watch.start();
    await settle();
    assert.equal(watch.healthy(), false);
    await clock.advance(1000);
    assert.equal(api.calls.filter((c) => c === 'get').length, 2);
    await clock.advance(1999);
    assert.equal(api.calls.filter((c) => c === 'get').length, 2, 'the second retry waits 2 s');
    await clock.advance(1);
    assert.equal(watch.healthy(), true);
    assert.equal(seen.length, 1);
  });

  it('spreads each retry over [d, 2d) by the random source (jitter 1.0, as client-go)', async () => {
    const { api, clock, watch } = setup((a) => {
      a.failNext('get', new Error('connect ECONNREFUSED'), new Error('connect ECONNREFUSED'));
    }, () => 0.75);
    watch.start();
    await settle();
    await clock.advance(1749);
    assert.equal(api.calls.filter((c) => c === 'get').length, 1, 'not before 1 s × 1.75');
    await clock.advance(1);
    assert.equal(api.calls.filter((c) => c === 'get').length, 2);
    await clock.advance(3499);
    assert.equal(api.calls.filter((c) => c === 'get').length, 2, 'not before 2 s × 1.75');
    await clock.advance(1);
    assert.equal(watch.healthy(), true);
  });

  it('reads again after a failed watch, after a 410 Gone and when the object was deleted (creating it again)', async () => {
    const { api, clock, seen, watch } = setup();
    watch.start();
    await settle();
    api.endWatches(Object.assign(new Error('Gone'), { statusCode: 410 }));
    await settle();
    assert.deepEqual(api.calls.slice(3), ['get', 'watch'], 'a 410 relists at once');
    api.remove('vm');
    await settle();
    assert.deepEqual(api.calls.slice(5), ['get', 'create', 'watch']);
    api.endWatches(new Error('socket hang up'));
    await settle();
    assert.equal(api.calls.length, 8, 'an error backs off before reading');
    await clock.advance(1000);
    assert.deepEqual(api.calls.slice(8), ['get', 'watch']);
    assert.equal(seen.length, 4);
  });

  it('keeps retrying while the resource does not exist (CRD not installed) or is forbidden', async () => {
    const { api, clock, watch } = setup();
    api.failNext('get', apiError(403, 'Forbidden'));
    api.failNext('create', apiError(404, 'NotFound'));
    watch.start();
    await clock.advance(1000);
    await clock.advance(2000);
    assert.deepEqual(api.calls, ['get', 'get', 'create', 'get', 'create', 'watch']);
    assert.equal(watch.healthy(), true);
  });

  it('delivers the object again at every relist, the periodic resync', async () => {
    const { api, clock, seen, watch } = setup();
    watch.start();
    await settle();
    for (let i = 0; i < 3; i++) {
      await clock.advance(25_000);
      api.endWatches();
    }
    await settle();
    assert.deepEqual(api.calls.filter((c) => c === 'get').length, 2);
    assert.equal(seen.length, 2);
  });

  it('stops while backing off, and opens no watch afterwards', async () => {
    const { api, watch } = setup();
    api.failNext('get', new Error('down'));
    watch.start();
    await settle();
    await watch.stop();
    assert.equal(watch.healthy(), false);
    assert.equal(api.openWatches(), 0);
    assert.deepEqual(api.calls, ['get']);
  });

  it('closes the open watch when stopped', async () => {
    const { api, watch } = setup();
    watch.start();
    await settle();
    assert.equal(api.openWatches(), 1);
    await watch.stop();
    assert.equal(api.openWatches(), 0);
  });
});
