/**
 * Component test: a static pod from a manifest file runs through the assembled reconciler (the
 * reconciler harness) with no API object at all, and stops when its file is removed; its mirror
 * pod stays until then.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { pino } from 'pino';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { createReconcilerHarness, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';
import { podKeyOf, type PodKey } from '../../util/pod-key.js';
import { createFileSource, type FileSource } from './file-source.js';
import { podEventsTo } from '../../test/doubles/pod-events.js';
import type { V1Pod } from '@kubernetes/client-node';
import { StaticPodNames } from '../../reconcilers/lifecycle/static-pod-names.js';
import { createMirrorPodManager, type MirrorPodManager } from './mirror-pods.js';

const MANIFEST = JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'kube-system' }, spec: { containers: [{ name: 'app', image: 'busybox' }] } });

describe('a static pod through the reconciler', () => {
  let dir = '';
  let h: ReconcilerHarness;
  let source: FileSource;
  const keys: PodKey[] = [];
  /** The API's mirror pods by name, and the mirror manager's calls, as static-pods.ts wires them. */
  const api = new Map<string, V1Pod>();
  const apiCalls: string[] = [];
  let mirrors: MirrorPodManager;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodelet-static-'));
    const names = new StaticPodNames({ onReleased: () => void mirrors.syncNow() });
    h = await createReconcilerHarness({ staticPodNames: names });
    api.clear();
    apiCalls.length = 0;
    mirrors = createMirrorPodManager({
      api: {
        create: (pod) => {
          apiCalls.push('create');
          api.set(pod.metadata?.name ?? '', { ...pod, metadata: { ...pod.metadata, uid: `mirror-${apiCalls.length}` } });
          return Promise.resolve();
        },
        delete: (key) => {
          apiCalls.push(`delete ${key.uid}`);
          api.delete(key.name);
          return Promise.resolve();
        },
      },
      staticPods: { list: () => source.list(), synced: () => source.synced() },
      apiPods: () => [...api.values()],
      node: () => ({ metadata: { name: 'node-a', uid: 'node-uid' } }),
      podEvents: podEventsTo(() => undefined),
      staticPodNames: names,
      clock: createFakeClock(),
      logger: pino({ level: 'silent' }),
    });
    // The harness's store holds exactly what the file source holds; the API holds nothing.
    source = createFileSource({
      dir,
      nodeName: 'node-a',
      logger: pino({ level: 'silent' }),
      clock: createFakeClock(),
      podEvents: podEventsTo((key) => {
        keys.push(key);
        h.store.clear();
        for (const pod of source.list()) h.store.set(pod.metadata?.uid ?? '', pod);
      }),
    });
  });

  afterEach(async () => {
    source.stop();
    await h.cleanup();
    await rm(dir, { recursive: true, force: true });
  });

  it('starts from its manifest alone and is torn down when the file is removed, never deleted through the API', async () => {
    await writeFile(path.join(dir, 'web.json'), MANIFEST);
    await source.start();
    const key = keys[0];
    assert.ok(key !== undefined);
    assert.equal(key.name, 'web-node-a');
    await h.reconciler().reconcile(key);
    const containers = await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': key.uid } });
    const sandboxes = await h.runtime.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': key.uid } });
    assert.deepEqual(containers.map((c) => `${c.metadata.name}:${c.state}`), ['app:CONTAINER_RUNNING']);
    assert.deepEqual(sandboxes.map((s) => s.state), ['SANDBOX_READY']);
    assert.equal(h.status.statuses.at(-1)?.phase, 'Running');

    await rm(path.join(dir, 'web.json'));
    await source.rescan();
    assert.deepEqual(keys.map((k) => k.uid), [key.uid, key.uid], 'added, then vanished');
    await h.reconciler().reconcile(key);
    assert.equal((await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.uid': key.uid } })).length, 0, 'no container left');
    assert.equal((await h.runtime.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': key.uid } })).length, 0, 'no sandbox left');
    assert.deepEqual(h.status.deleted, [], 'a static pod has no API object to delete');
  });

  it('keeps the mirror pod, same UID, until the removed static pod has stopped, then deletes it', async () => {
    await writeFile(path.join(dir, 'web.json'), MANIFEST);
    await source.start();
    const pod = source.list()[0];
    assert.ok(pod !== undefined);
    const key = podKeyOf(pod);
    await h.reconciler().reconcile(key);
    await mirrors.syncNow();
    const mirrorUid = api.get('web-node-a')?.metadata?.uid;
    assert.ok(mirrorUid !== undefined);

    await rm(path.join(dir, 'web.json'));
    await source.rescan();
    await mirrors.syncNow();
    assert.equal(api.get('web-node-a')?.metadata?.uid, mirrorUid, 'the pod still runs (its grace period): its mirror pod stays');

    // The reconcile of the gone pod stops it, removes it and forgets it: the mirror manager hears it at once.
    await h.reconciler().reconcile(key);
    await mirrors.syncNow();
    assert.equal(api.get('web-node-a'), undefined);
    assert.deepEqual(apiCalls, ['create', `delete ${mirrorUid}`]);
  });
});
