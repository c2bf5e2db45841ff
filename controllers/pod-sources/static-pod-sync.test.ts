/**
 * Component test: a static pod from a manifest file runs through the assembled reconciler (the
 * reconciler harness) with no API object at all, and stops when its file is removed.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { pino } from 'pino';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { createReconcilerHarness, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';
import type { PodKey } from '../../util/pod-key.js';
import { createFileSource, type FileSource } from './file-source.js';
import { podEventsTo } from '../../test/doubles/pod-events.js';

const MANIFEST = JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'kube-system' }, spec: { containers: [{ name: 'app', image: 'busybox' }] } });

describe('a static pod through the reconciler', () => {
  let dir = '';
  let h: ReconcilerHarness;
  let source: FileSource;
  const keys: PodKey[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodelet-static-'));
    h = await createReconcilerHarness();
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
});
