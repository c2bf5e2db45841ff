import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import type { PodKey } from '../../util/pod-key.js';
import { createDesiredPodStore, withoutMirrorPods, type DesiredPodSource } from './pod-store.js';
import { isMirrorPod } from './static-pod.js';
import { NO_POD_EVENTS, podEventsTo } from '../../test/doubles/pod-events.js';

/** A source over a plain map, with settable synced/healthy flags. */
function mapSource(name: string, pods: V1Pod[] = []): DesiredPodSource & { pods: Map<string, V1Pod>; isSynced: boolean; isHealthy: boolean } {
  const byUid = new Map(pods.map((p) => [p.metadata?.uid ?? '', p]));
  return {
    name,
    pods: byUid,
    isSynced: true,
    isHealthy: true,
    start: () => Promise.resolve(),
    stop: () => undefined,
    get: (uid) => byUid.get(uid),
    list: () => [...byUid.values()],
    synced() {
      return this.isSynced;
    },
    healthy() {
      return this.isHealthy;
    },
  };
}

const pod = (uid: string, name = uid): V1Pod => ({ metadata: { uid, name, namespace: 'ns' }, spec: { containers: [] } });

describe('desired-pod store', () => {
  it('answers from whichever source has the UID, and names that source', () => {
    const api = mapSource('api', [pod('a')]);
    const file = mapSource('file', [pod('s')]);
    const store = createDesiredPodStore({ sources: [api, file], podEvents: NO_POD_EVENTS });
    assert.equal(store.get('a')?.metadata?.name, 'a');
    assert.equal(store.get('s')?.metadata?.name, 's');
    assert.equal(store.sourceOf('s'), 'file');
    assert.equal(store.get('x'), undefined);
    assert.deepEqual(store.list().map((p) => p.metadata?.uid).sort(), ['a', 's']);
  });

  it('calls a pod gone only when no source has it', () => {
    const api = mapSource('api', [pod('a')]);
    const file = mapSource('file', [pod('a', 'static-a')]);
    const store = createDesiredPodStore({ sources: [api, file], podEvents: NO_POD_EVENTS });
    api.pods.delete('a');
    assert.equal(store.get('a')?.metadata?.name, 'static-a');
    file.pods.delete('a');
    assert.equal(store.get('a'), undefined);
  });

  it('prefers the first source when two have the UID, and lists it once', () => {
    const store = createDesiredPodStore({ sources: [mapSource('api', [pod('a', 'from-api')]), mapSource('file', [pod('a', 'from-file')])], podEvents: NO_POD_EVENTS });
    assert.equal(store.get('a')?.metadata?.name, 'from-api');
    assert.equal(store.list().length, 1);
  });

  it('is synced only when every source is, and healthy only when every source is', () => {
    const api = mapSource('api');
    const file = mapSource('file');
    const store = createDesiredPodStore({ sources: [api, file], podEvents: NO_POD_EVENTS });
    assert.equal(store.synced(), true);
    file.isSynced = false;
    assert.equal(store.synced(), false, 'an unsynced source keeps the store unsynced');
    file.isSynced = true;
    api.isHealthy = false;
    assert.equal(store.healthy(), false);
  });

  it('trusts a pod\'s absence once the source that had it is synced, even while another source is not', () => {
    const api = mapSource('api', [pod('a')]);
    const url = mapSource('http');
    url.isSynced = false;
    const store = createDesiredPodStore({ sources: [api, url], podEvents: NO_POD_EVENTS });
    assert.equal(store.get('a')?.metadata?.name, 'a', 'the reconciler sees the pod: its owner is the API source');
    api.pods.delete('a');
    assert.equal(store.synced(), false, 'the store as a whole waits for the URL source');
    assert.equal(store.synced('a'), true, 'a pod removed from its synced owner is gone regardless of the URL source');
    assert.equal(store.synced('orphan'), false, 'a UID no source was seen having waits for every source (orphan cleanup)');
    api.isSynced = false;
    assert.equal(store.synced('a'), false, 'an owner that is itself unsynced proves nothing');
    api.isSynced = true;
    url.isSynced = true;
    assert.equal(store.synced('orphan'), true, 'every source synced: orphans are decided too');
  });

  it('learns owners from list() as well, and follows a UID to the source that has it now', () => {
    const api = mapSource('api', [pod('a')]);
    const file = mapSource('file');
    const store = createDesiredPodStore({ sources: [api, file], podEvents: NO_POD_EVENTS });
    store.list();
    api.pods.delete('a');
    file.pods.set('a', pod('a', 'static-a'));
    assert.equal(store.get('a')?.metadata?.name, 'static-a');
    file.pods.delete('a');
    api.isSynced = true;
    file.isSynced = false;
    assert.equal(store.synced('a'), false, 'the owner is now the file source, which is not synced');
    api.isSynced = false;
    file.isSynced = true;
    assert.equal(store.synced('a'), true, 'its owner, the file source, is synced: the unsynced API source does not matter');
  });

  it('forgets the owner of a UID absent at two resync rounds (bounded memory), then waits for every source again', () => {
    const api = mapSource('api', [pod('a')]);
    const url = mapSource('http');
    url.isSynced = false;
    const store = createDesiredPodStore({ sources: [api, url], podEvents: NO_POD_EVENTS });
    store.resyncAll();
    api.pods.delete('a');
    store.resyncAll();
    assert.equal(store.synced('a'), true, 'one round absent: still remembered');
    store.resyncAll();
    assert.equal(store.synced('a'), false, 'two rounds absent: forgotten, an orphan now');
  });

  it('names every pod of every source once on resyncAll', () => {
    const seen: PodKey[] = [];
    const store = createDesiredPodStore({ sources: [mapSource('api', [pod('a'), pod('b')]), mapSource('file', [pod('s')])], podEvents: podEventsTo((key) => seen.push(key)) });
    store.resyncAll();
    assert.deepEqual(seen.map((k) => k.uid).sort(), ['a', 'b', 's']);
    assert.deepEqual(seen.find((k) => k.uid === 's'), { uid: 's', namespace: 'ns', name: 's' });
  });

  it('confirms a pod gone only when no source has it and every origin says so', async () => {
    const api = { ...mapSource('api'), confirmAbsent: (key: PodKey) => Promise.resolve(key.uid !== 'lagging') };
    const store = createDesiredPodStore({ sources: [api, mapSource('file', [pod('s')])], podEvents: NO_POD_EVENTS });
    assert.equal(await store.confirmGone({ uid: 'gone', namespace: 'ns', name: 'gone' }), true);
    assert.equal(await store.confirmGone({ uid: 'lagging', namespace: 'ns', name: 'lagging' }), false, 'the origin still has it');
    assert.equal(await store.confirmGone({ uid: 's', namespace: 'ns', name: 's' }), false, 'a source has it');
  });

  it('sees the API source without mirror pods: they are never run, and never make a pod look present', async () => {
    const mirror: V1Pod = { metadata: { uid: 'm', name: 'web-n1', namespace: 'ns', annotations: { 'kubernetes.io/config.mirror': 'h' } }, spec: { containers: [] } };
    const api = { ...mapSource('api', [pod('a'), mirror]), confirmAbsent: (key: PodKey) => Promise.resolve(key.uid !== 'lagging') };
    const store = createDesiredPodStore({ sources: [withoutMirrorPods(api, isMirrorPod)], podEvents: NO_POD_EVENTS });
    assert.equal(store.get('m'), undefined);
    assert.deepEqual(store.list().map((p) => p.metadata?.uid), ['a']);
    assert.equal(await store.confirmGone({ uid: 'lagging', namespace: 'ns', name: 'x' }), false, "the API source's origin is still asked");
  });
});
