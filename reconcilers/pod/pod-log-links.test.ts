/**
 * Component tests of the container log links as the assembled reconciler makes and removes them
 * (the kubelet's legacy symlinks in /var/log/containers): one per started container, named
 * `<pod>_<namespace>_<container>-<id>.log` and pointing at its log file; gone with the container.
 */
import assert from 'node:assert/strict';
import { appendFile, mkdir, readdir, readFile, readlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { CallOptions } from '../../cri/types.js';
import { basePod, UID } from '../../test/doubles/pod-fixtures.js';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';
import { containerLogLinkName } from '../model/log-link-names.js';

/** As containerd: a started container's log file exists (with a line of its output). */
function runtimeWritesLogs(h: ReconcilerHarness): void {
  const start = h.runtime.startContainer.bind(h.runtime);
  h.runtime.startContainer = async (id: string, options?: CallOptions) => {
    await start(id, options);
    const { logPath } = await h.runtime.containerStatus(id);
    await mkdir(path.dirname(logPath), { recursive: true });
    await appendFile(logPath, `output of ${id}\n`);
  };
}

describe('container log links', () => {
  let h: ReconcilerHarness;
  let linkDir = '';

  beforeEach(async () => {
    h = await createReconcilerHarness();
    linkDir = path.join(h.root, 'containers');
  });

  afterEach(async () => {
    await h.cleanup();
  });

  const linkOf = (container: string, id: string): string => path.join(linkDir, containerLogLinkName({ podName: 'web', podNamespace: 'default', containerName: container, containerId: id }));
  const idsOf = async (name: string): Promise<string[]> => (await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': name } })).map((c) => c.id);
  const links = async (): Promise<string[]> => (await readdir(linkDir).catch(() => [])).sort();

  it('links each started container as <pod>_<namespace>_<container>-<id>.log to its log file', async () => {
    runtimeWritesLogs(h);
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    const [app] = await idsOf('app');
    const [sidecar] = await idsOf('sidecar');
    assert.ok(app !== undefined && sidecar !== undefined);
    assert.deepEqual(await links(), [path.basename(linkOf('app', app)), path.basename(linkOf('sidecar', sidecar))].sort());
    const { logPath } = await h.runtime.containerStatus(app);
    assert.equal(logPath, path.join(h.root, 'logs', `default_web_${UID}`, 'app', '0.log'));
    assert.equal(await readlink(linkOf('app', app)), logPath);
    assert.equal(await readFile(linkOf('app', app), 'utf8'), `output of ${app}\n`, 'read through the link');
  });

  it('gives a restarted container a link of its own; the exited one keeps its link while it exists', async () => {
    runtimeWritesLogs(h);
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    const [first] = await idsOf('app');
    h.runtime.setContainerExited(first ?? '', 1);
    await h.reconciler().reconcile(ref);
    const second = (await idsOf('app')).find((id) => id !== first);
    assert.ok(first !== undefined && second !== undefined, 'restarted');
    assert.equal(await readlink(linkOf('app', second)), path.join(h.root, 'logs', `default_web_${UID}`, 'app', '1.log'));
    assert.equal(await readlink(linkOf('app', first)), path.join(h.root, 'logs', `default_web_${UID}`, 'app', '0.log'));
  });

  it('makes no link for a container whose runtime wrote no log file', async () => {
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    assert.equal(h.status.last()?.phase, 'Running');
    assert.deepEqual(await links(), []);
  });

  it('starts the container all the same when its link cannot be made', async () => {
    runtimeWritesLogs(h);
    await writeFile(linkDir, 'a file where the link directory should be');
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    assert.ok(h.status.last()?.containerStatuses?.every((c) => c.state?.running !== undefined));
  });

  it('removes the links of a deleted pod with its containers', async () => {
    runtimeWritesLogs(h);
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    const [first] = await idsOf('app');
    h.runtime.setContainerExited(first ?? '', 1);
    await h.reconciler().reconcile(ref);
    assert.equal((await links()).length, 3);
    h.store.set(UID, { ...h.store.get(UID)!, metadata: { ...h.store.get(UID)!.metadata, deletionTimestamp: new Date() } });
    await h.reconciler().reconcile(ref);
    assert.deepEqual(await h.runtime.listContainers(), []);
    assert.deepEqual(await links(), [], 'every link of the pod is gone');
  });

  it('removes the links of a pod gone from every source with its containers', async () => {
    runtimeWritesLogs(h);
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    assert.equal((await links()).length, 2);
    h.store.delete(UID);
    await h.reconciler().reconcile(ref);
    assert.deepEqual(await h.runtime.listContainers(), []);
    assert.deepEqual(await links(), []);
  });

  it("removes an evicted pod's dead containers' links with them, and leaves other entries alone", async () => {
    runtimeWritesLogs(h);
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    await writeFile(path.join(linkDir, 'someone-elses.log'), 'x\n');
    h.sync().evictions.record(ref, { reason: 'Evicted', message: 'The node was low on resource: memory. ', gracePeriodSeconds: 0 });
    await h.reconciler().reconcile(ref);
    assert.equal((await links()).length, 3, 'the run that evicts keeps the containers and their links');
    h.store.set(UID, { ...h.store.get(UID)!, status: h.status.statuses.at(-1)! });
    await h.reconciler().reconcile(ref);
    assert.deepEqual(await h.runtime.listContainers(), []);
    assert.deepEqual(await links(), ['someone-elses.log']);
  });
});
