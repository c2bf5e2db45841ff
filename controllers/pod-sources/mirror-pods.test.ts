import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiException, type V1Node, type V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { podKeyOf, type PodKey } from '../../util/pod-key.js';
import { createMirrorPodManager, type MirrorPodApi } from './mirror-pods.js';
import { applyStaticPodDefaults, parseManifest } from './static-pod.js';
import { podEventsTo } from '../../test/doubles/pod-events.js';
import { StaticPodNames } from '../../reconcilers/lifecycle/static-pod-names.js';

const NODE: V1Node = { metadata: { name: 'n1', uid: 'node-uid' } };

function staticPod(image = 'busybox', namespace = 'ns'): V1Pod {
  const manifest = parseManifest('/m/web.json', JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace }, spec: { containers: [{ name: 'main', image }] } }));
  return applyStaticPodDefaults(manifest, { nodeName: 'n1', file: `/m/${namespace}-web.json`, seenAt: new Date(0) });
}

/** An API holding pods by namespace/name, as the API cache would show them. */
class FakeMirrorApi implements MirrorPodApi {
  readonly pods = new Map<string, V1Pod>();
  readonly calls: string[] = [];
  private next = 1;
  /** Namespaces the API does not have (a create there is a 404). */
  readonly missingNamespaces = new Set<string>();
  create(pod: V1Pod): Promise<void> {
    const name = `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
    this.calls.push(`create ${name}`);
    if (this.missingNamespaces.has(pod.metadata?.namespace ?? '')) return Promise.reject(new ApiException(404, 'HTTP-Code: 404', JSON.stringify({ reason: 'NotFound' }), {}));
    if (this.pods.has(name)) return Promise.reject(new ApiException(409, 'HTTP-Code: 409', JSON.stringify({ reason: 'AlreadyExists' }), {}));
    this.pods.set(name, { ...pod, metadata: { ...pod.metadata, uid: `mirror-${this.next++}` } });
    return Promise.resolve();
  }
  delete(key: PodKey): Promise<void> {
    this.calls.push(`delete ${key.namespace}/${key.name} ${key.uid}`);
    this.pods.delete(`${key.namespace}/${key.name}`);
    return Promise.resolve();
  }
}

function setup(statics: V1Pod[], options: { synced?: boolean | ((source?: string) => boolean); node?: V1Node; names?: StaticPodNames } = {}): { api: FakeMirrorApi; manager: ReturnType<typeof createMirrorPodManager>; synced: PodKey[] } {
  const api = new FakeMirrorApi();
  const synced: PodKey[] = [];
  const manager = createMirrorPodManager({
    api,
    staticPods: { list: () => statics, synced: (source) => (typeof options.synced === 'function' ? options.synced(source) : (options.synced ?? true)) },
    apiPods: () => [...api.pods.values()],
    node: () => ('node' in options ? options.node : NODE),
    podEvents: podEventsTo((key) => synced.push(key)),
    ...(options.names === undefined ? {} : { staticPodNames: options.names }),
    clock: createFakeClock(),
    logger: pino({ level: 'silent' }),
  });
  return { api, manager, synced };
}

describe('mirror pods', () => {
  it('creates one per static pod: same name, mirror annotation = config hash, owned by the Node; re-syncs the static pod', async () => {
    const pod = staticPod();
    const { api, manager, synced } = setup([pod]);
    assert.equal(await manager.syncNow(), true);
    const mirror = api.pods.get('ns/web-n1');
    assert.ok(mirror !== undefined);
    assert.equal(mirror.metadata?.annotations?.['kubernetes.io/config.mirror'], pod.metadata?.uid);
    assert.equal(mirror.metadata?.annotations?.['kubernetes.io/config.source'], 'file');
    assert.deepEqual(mirror.metadata?.ownerReferences, [{ apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'node-uid', controller: true }]);
    assert.deepEqual(mirror.spec, pod.spec);
    assert.deepEqual(synced.map((k) => k.uid), [pod.metadata?.uid]);
    assert.equal(manager.mirrorOf(pod)?.metadata?.uid, 'mirror-1');
    await manager.syncNow();
    assert.deepEqual(api.calls, ['create ns/web-n1'], 'a current mirror pod is left alone');
  });

  it("writes every other static pod's mirror pod when one cannot be written (its namespace is gone), and fails the round for that one", async () => {
    const orphan = staticPod('busybox', 'gone');
    const pod = staticPod();
    const { api, manager, synced } = setup([orphan, pod]);
    api.missingNamespaces.add('gone');
    assert.equal(await manager.syncNow(), false, 'the round failed: it is retried');
    assert.deepEqual(api.calls, ['create gone/web-n1', 'create ns/web-n1']);
    assert.ok(api.pods.has('ns/web-n1'));
    assert.deepEqual(synced.map((k) => k.uid), [pod.metadata?.uid]);
  });

  it('creates none before the Node is known (its UID is the owner)', async () => {
    const { api, manager } = setup([staticPod()], { node: undefined });
    await manager.syncNow();
    assert.deepEqual(api.calls, []);
  });

  it('replaces a mirror pod whose hash differs (the file was edited), and one being deleted', async () => {
    const { api, manager } = setup([staticPod('busybox:2')]);
    const stale = { ...staticPod(), metadata: { ...staticPod().metadata, uid: 'old', annotations: { 'kubernetes.io/config.mirror': 'old-hash' } } };
    api.pods.set('ns/web-n1', stale);
    await manager.syncNow();
    assert.deepEqual(api.calls, ['delete ns/web-n1 old', 'create ns/web-n1']);
    const current = api.pods.get('ns/web-n1')!;
    api.pods.set('ns/web-n1', { ...current, metadata: { ...current.metadata, deletionTimestamp: new Date() } });
    assert.equal(manager.mirrorOf(staticPod('busybox:2')), undefined, 'a mirror pod being deleted is not the status target');
    await manager.syncNow();
    assert.deepEqual(api.calls.slice(2), [`delete ns/web-n1 ${current.metadata?.uid ?? ''}`, 'create ns/web-n1']);
  });

  it('deletes a mirror pod without a static pod, but only once the file source has synced', async () => {
    const orphan = { ...staticPod(), metadata: { ...staticPod().metadata, uid: 'orphan', annotations: { 'kubernetes.io/config.mirror': 'h' } } };
    const early = setup([], { synced: false });
    early.api.pods.set('ns/web-n1', orphan);
    await early.manager.syncNow();
    assert.deepEqual(early.api.calls, []);
    const later = setup([]);
    later.api.pods.set('ns/web-n1', orphan);
    later.api.pods.set('ns/plain', { metadata: { name: 'plain', namespace: 'ns', uid: 'p' } });
    await later.manager.syncNow();
    assert.deepEqual(later.api.calls, ['delete ns/web-n1 orphan'], 'only mirror pods are touched');
  });

  it('deletes an orphan mirror pod once the source it came from has synced, whatever the other static source does', async () => {
    const mirrorFrom = (source: string, name: string): V1Pod => ({ ...staticPod(), metadata: { name, namespace: 'ns', uid: `m-${name}`, annotations: { 'kubernetes.io/config.mirror': 'h', 'kubernetes.io/config.source': source } } });
    const asked: (string | undefined)[] = [];
    // The file source has synced; the URL source never answered.
    const { api, manager } = setup([], { synced: (source) => (asked.push(source), source === 'file') });
    api.pods.set('ns/from-file', mirrorFrom('file', 'from-file'));
    api.pods.set('ns/from-url', mirrorFrom('http', 'from-url'));
    await manager.syncNow();
    assert.deepEqual(api.calls, ['delete ns/from-file m-from-file'], "the URL's mirror pod waits for the URL source");
    assert.deepEqual(asked.sort(), ['file', 'http']);
  });

  it('keeps the mirror pod, same UID, while a removed static pod stops, and deletes it once the pod let go of its name', async () => {
    const pod = staticPod();
    const statics = [pod];
    const key = podKeyOf(pod);
    const names = new StaticPodNames();
    names.tryStart(key, () => true);
    const { api, manager } = setup(statics, { names });
    await manager.syncNow();
    const uid = api.pods.get('ns/web-n1')?.metadata?.uid;
    statics.length = 0; // the manifest is removed; its pod is still stopping (it holds its name)
    await manager.syncNow();
    assert.equal(api.pods.get('ns/web-n1')?.metadata?.uid, uid, 'the same mirror pod');
    assert.deepEqual(api.calls, ['create ns/web-n1']);
    names.podForgotten(key);
    await manager.syncNow();
    assert.deepEqual(api.calls, ['create ns/web-n1', `delete ns/web-n1 ${uid ?? ''}`]);
  });

  it("leaves an edited manifest's mirror pod to the old pod while it stops, then replaces it", async () => {
    const old = staticPod('busybox:1');
    const edited = staticPod('busybox:2');
    const statics = [old];
    const names = new StaticPodNames();
    names.tryStart(podKeyOf(old), () => true);
    const { api, manager } = setup(statics, { names });
    await manager.syncNow();
    const uid = api.pods.get('ns/web-n1')?.metadata?.uid ?? '';
    statics.splice(0, 1, edited);
    assert.equal(names.tryStart(podKeyOf(edited), () => true).kind, 'wait');
    await manager.syncNow();
    assert.equal(api.pods.get('ns/web-n1')?.metadata?.uid, uid, 'the old mirror pod stays while the old pod stops');
    names.podForgotten(podKeyOf(old));
    await manager.syncNow();
    assert.deepEqual(api.calls, ['create ns/web-n1', `delete ns/web-n1 ${uid}`, 'create ns/web-n1']);
    assert.equal(api.pods.get('ns/web-n1')?.metadata?.annotations?.['kubernetes.io/config.mirror'], edited.metadata?.uid);
  });
});
