/**
 * Component test: `--manifest-url` static pods through the assembled reconciler (the reconciler
 * harness, fake runtime) with the real desired-pod store over an API map source and the real URL
 * source, served by an HTTP server on 127.0.0.1. Proves the URL's pods run and stop with the body,
 * and the readiness rule: a URL that does not answer never blocks the teardown of a pod deleted
 * from the API, while an orphan of unknown origin still waits for every source.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import { createDesiredPodStore, type DesiredPodSource } from '../../controllers/pod-sources/pod-store.js';
import { isStaticPod } from '../../controllers/pod-sources/static-pod.js';
import { createUrlSource, type UrlSource } from '../../controllers/pod-sources/url-source.js';
import type { PodKey } from '../../util/pod-key.js';
import { createFakeClock } from '../doubles/fake-clock.js';
import { basePod } from '../doubles/pod-fixtures.js';
import { createReconcilerHarness, type ReconcilerHarness } from '../doubles/reconciler-harness.js';
import { NO_POD_EVENTS, podEventsTo } from '../doubles/pod-events.js';

const MANIFEST = JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [{ metadata: { name: 'web', namespace: 'kube-system' }, spec: { containers: [{ name: 'app', image: 'busybox' }] } }] });

/**
 * The API source as the harness's map: always synced, the map is the origin. The harness's status
 * writer puts every pod it writes into the map; a static pod's status really goes to its mirror
 * pod, so static pods are not API pods here.
 */
function apiSource(pods: Map<string, V1Pod>): DesiredPodSource {
  const api = (): V1Pod[] => [...pods.values()].filter((pod) => !isStaticPod(pod));
  return {
    name: 'api',
    start: () => Promise.resolve(),
    stop: () => undefined,
    get: (uid) => api().find((pod) => pod.metadata?.uid === uid),
    list: api,
    synced: () => true,
    healthy: () => true,
  };
}

describe('URL static pods through the reconciler, and teardown while the URL is unsynced', () => {
  let server: Server;
  let answer = { status: 200, body: MANIFEST };
  let url = '';
  let h: ReconcilerHarness;
  let source: UrlSource;
  const keys: PodKey[] = [];

  before(async () => {
    server = createServer((_req, res) => {
      res.writeHead(answer.status).end(answer.body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/pods`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => { resolve(); }));
  });
  beforeEach(async () => {
    keys.length = 0;
    source = createUrlSource({ url, headers: [], nodeName: 'node-a', logger: pino({ level: 'silent' }), clock: createFakeClock(), podEvents: podEventsTo((key) => keys.push(key)) });
    h = await createReconcilerHarness({ podStore: (apiPods) => createDesiredPodStore({ sources: [apiSource(apiPods), source], podEvents: NO_POD_EVENTS }) });
  });
  afterEach(async () => {
    source.stop();
    await h.cleanup();
  });

  const runtimeOf = async (uid: string): Promise<string[]> => {
    const containers = await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': uid } });
    const sandboxes = await h.runtime.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': uid } });
    return [...containers.map((c) => `${c.metadata.name}:${c.state}`), ...sandboxes.map((s) => s.state)];
  };

  it("runs the URL's pod with no API object, and tears it down when the body no longer lists it", async () => {
    answer = { status: 200, body: MANIFEST };
    await source.start();
    const key = keys[0];
    assert.ok(key !== undefined);
    assert.equal(key.name, 'web-node-a');
    await h.reconciler().reconcile(key);
    assert.deepEqual(await runtimeOf(key.uid), ['app:CONTAINER_RUNNING', 'SANDBOX_READY']);
    assert.equal(h.status.statuses.at(-1)?.phase, 'Running');
    answer = { status: 200, body: '' };
    await source.poll();
    await h.reconciler().reconcile(key);
    assert.deepEqual(await runtimeOf(key.uid), [], 'nothing left in the runtime');
    assert.deepEqual(h.status.deleted, [], 'a static pod has no API object to delete');
  });

  it('tears down a pod deleted from the API while the URL answers 500 (unsynced); an orphan of unknown origin waits for the URL', async () => {
    answer = { status: 500, body: 'down' };
    await source.start();
    assert.equal(source.synced(), false);
    const named = (uid: string, name: string): V1Pod =>
      basePod((pod) => {
        pod.metadata = { uid, name, namespace: 'default' };
      });
    const web = named('api-web', 'web');
    const orphan = named('api-orphan', 'orphan');
    for (const pod of [web, orphan]) {
      h.store.set(pod.metadata?.uid ?? '', pod);
      await h.reconciler().reconcile({ uid: pod.metadata?.uid ?? '', namespace: 'default', name: pod.metadata?.name ?? '' });
    }
    const webKey = { uid: 'api-web', namespace: 'default', name: 'web' };
    assert.equal((await runtimeOf('api-web')).length > 0, true);

    h.store.delete('api-web');
    const outcome = await h.reconciler().reconcile(webKey);
    assert.deepEqual(await runtimeOf('api-web'), [], 'removed from its synced owner (the API): gone although the URL source is unsynced');
    assert.equal(outcome.requeueAfterMs, undefined);

    // A restarted agent knows no owners: a UID found only in the runtime is an orphan.
    h.restartAgent();
    h.store.delete('api-orphan');
    const orphanKey = { uid: 'api-orphan', namespace: 'default', name: 'orphan' };
    const waited = await h.reconciler().reconcile(orphanKey);
    assert.ok(waited.requeueAfterMs !== undefined, 'retried later');
    assert.ok((await runtimeOf('api-orphan')).includes('SANDBOX_READY'), 'the orphan keeps running while the URL source is unsynced');

    answer = { status: 200, body: '' };
    await source.poll();
    assert.equal(source.synced(), true);
    await h.reconciler().reconcile(orphanKey);
    assert.deepEqual(await runtimeOf('api-orphan'), [], 'every source synced: the orphan is cleaned up');
  });
});
