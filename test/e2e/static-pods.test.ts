/**
 * End to end: a static pod from the agent's manifest directory (`--pod-manifest-path`, set by the
 * harness to `$CLUSTER_DIR/manifests`). The runtime runs it with no API object of its own; the API
 * shows its mirror pod. Asserted in the API (mirror pod, annotations, owner, status) and in the
 * runtime (crictl, counted). The directory is left empty, whatever happens.
 */
import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { NODE_NAME, createNamespace, deleteNamespace, eventually, expectRuntime, getPod, kubectl, requireCluster, runtimeContainers, runtimeSandboxes, uniqueName } from './helpers.js';

const MANIFEST_DIR = path.join(process.env.CLUSTER_DIR ?? '', 'manifests');

function manifest(namespace: string, script: string, options: { name?: string; graceSeconds?: number } = {}): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: options.name ?? 'web', namespace, labels: { app: 'static-web' } },
    spec: { terminationGracePeriodSeconds: options.graceSeconds ?? 2, containers: [{ name: 'main', image: 'busybox:1.35', command: ['sh', '-c', script] }] },
  });
}

/** A container that catches SIGTERM and keeps running: only the grace period's SIGKILL stops it. */
const IGNORES_SIGTERM = 'trap "echo caught SIGTERM; sleep 100" TERM; sleep 1000 & wait; sleep 100';

const annotation = (pod: V1Pod, key: string): string | undefined => pod.metadata?.annotations?.[key];

/** `kubelet_restarted_pods_total{static="true"}` on the node's /metrics. */
async function staticRestarts(): Promise<number> {
  const text = await kubectl(['get', '--raw', `/api/v1/nodes/${NODE_NAME}/proxy/metrics`]);
  const line = text.split('\n').find((l) => l.startsWith('kubelet_restarted_pods_total{static="true"} '));
  assert.ok(line !== undefined, 'kubelet_restarted_pods_total{static="true"} is exported');
  return Number(line.split(' ')[1]);
}

/** The running mirror pod whose mirror annotation is `hash` (any hash when undefined). */
async function runningMirror(namespace: string, name: string, hash?: string): Promise<V1Pod> {
  return eventually(`mirror pod ${namespace}/${name} Running${hash === undefined ? '' : ` with hash ${hash}`}`, async () => {
    const pod = await getPod(namespace, name);
    if (pod === undefined || pod.metadata?.deletionTimestamp !== undefined) return undefined;
    if (hash !== undefined && annotation(pod, 'kubernetes.io/config.mirror') !== hash) return undefined;
    const ready = pod.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
    return pod.status?.phase === 'Running' && ready ? pod : undefined;
  });
}

describe('a static pod from the manifest directory', () => {
  let namespace = '';
  let file = '';
  let gracefulFile = '';
  let recreatedFile = '';

  before(async () => {
    requireCluster();
    assert.notEqual(process.env.CLUSTER_DIR ?? '', '', 'CLUSTER_DIR is set by the cluster env');
    namespace = await createNamespace('e2e-static');
    file = path.join(MANIFEST_DIR, `${uniqueName('static')}.json`);
    gracefulFile = path.join(MANIFEST_DIR, `${uniqueName('static-graceful')}.json`);
    recreatedFile = path.join(MANIFEST_DIR, `${uniqueName('static-recreated')}.json`);
  });

  after(async () => {
    if (file !== '') await rm(file, { force: true });
    if (gracefulFile !== '') await rm(gracefulFile, { force: true });
    if (recreatedFile !== '') await rm(recreatedFile, { force: true });
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('runs without an API object, is mirrored, survives deleting the mirror, is replaced on edit and removed with its file', async () => {
    const name = `web-${NODE_NAME.toLowerCase()}`;
    const started = Date.now();
    await writeFile(file, manifest(namespace, 'sleep 3600'));

    // 1. The mirror pod appears Running, with the static pod's identity in its annotations.
    const mirror = await runningMirror(namespace, name);
    const staticUid = annotation(mirror, 'kubernetes.io/config.hash') ?? '';
    console.log(`# static pod: manifest written → mirror pod Running in ${Date.now() - started} ms`);
    assert.match(staticUid, /^[0-9a-f]{32}$/, 'config.hash is the static UID (an MD5)');
    assert.equal(annotation(mirror, 'kubernetes.io/config.mirror'), staticUid);
    assert.equal(annotation(mirror, 'kubernetes.io/config.source'), 'file');
    assert.notEqual(mirror.metadata?.uid, staticUid, 'the mirror pod has a UID of its own');
    assert.deepEqual(mirror.metadata?.ownerReferences?.map((o) => `${o.kind}/${o.name}/${String(o.controller)}`), [`Node/${NODE_NAME}/true`]);
    assert.equal(mirror.spec?.nodeName, NODE_NAME);
    assert.ok(mirror.spec?.tolerations?.some((t) => t.operator === 'Exists' && t.effect === 'NoExecute' && t.key === undefined));
    await expectRuntime(staticUid, { sandboxes: ['sandbox#0:READY'], containers: ['main#0:RUNNING'] });
    assert.equal(mirror.metadata?.uid !== undefined && (await runtimeContainers(mirror.metadata.uid)).length, 0, 'nothing runs under the mirror UID');
    const containerId = (await runtimeContainers(staticUid))[0]?.id ?? '';
    assert.equal(mirror.status?.containerStatuses?.[0]?.containerID, `containerd://${containerId}`, "the static pod's status is on its mirror pod");

    // 2. Deleting the mirror pod does not stop the static pod; the mirror comes back (a new object).
    await kubectl(['delete', 'pod', name, '-n', namespace, '--wait=true']);
    const again = await runningMirror(namespace, name, staticUid);
    assert.notEqual(again.metadata?.uid, mirror.metadata?.uid, 'a new mirror pod object');
    await expectRuntime(staticUid, { sandboxes: ['sandbox#0:READY'], containers: ['main#0:RUNNING'] });
    assert.equal((await runtimeContainers(staticUid))[0]?.id, containerId, 'the same container still runs');
    assert.equal(again.status?.containerStatuses?.[0]?.containerID, `containerd://${containerId}`, 'the status is written to the new mirror pod');

    // 3. Editing the file replaces the pod: a new UID runs, the old one is torn down, the mirror follows.
    await writeFile(file, manifest(namespace, 'sleep 3601'));
    const edited = await eventually('mirror pod of the edited manifest', async () => {
      const pod = await getPod(namespace, name);
      const hash = pod === undefined ? undefined : annotation(pod, 'kubernetes.io/config.mirror');
      return hash !== undefined && hash !== staticUid ? hash : undefined;
    });
    await runningMirror(namespace, name, edited);
    await expectRuntime(edited, { sandboxes: ['sandbox#0:READY'], containers: ['main#0:RUNNING'] });
    await expectRuntime(staticUid, { sandboxes: [], containers: [] });

    // 4. Removing the file stops the pod and removes its mirror pod.
    const removing = Date.now();
    await rm(file);
    await eventually('mirror pod gone', async () => ((await getPod(namespace, name)) === undefined ? true : undefined));
    await expectRuntime(edited, { sandboxes: [], containers: [] });
    console.log(`# static pod: file removed → mirror pod gone and runtime empty in ${Date.now() - removing} ms`);
  });

  // The node conformance test "MirrorPodWithGracePeriod ... should satisfy grace period when static
  // pod is deleted": the kubelet keeps the mirror pod (same UID, Running) while the static pod runs
  // out its grace period, and deletes it once the pod has terminated.
  it('keeps the mirror pod, same UID and Running, while a removed static pod runs out its grace period, then deletes it', async () => {
    const GRACE_SECONDS = 20;
    const name = `graceful-${NODE_NAME.toLowerCase()}`;
    await writeFile(gracefulFile, manifest(namespace, IGNORES_SIGTERM, { name: 'graceful', graceSeconds: GRACE_SECONDS }));
    const mirror = await runningMirror(namespace, name);
    const staticUid = annotation(mirror, 'kubernetes.io/config.hash') ?? '';
    await expectRuntime(staticUid, { sandboxes: ['sandbox#0:READY'], containers: ['main#0:RUNNING'] });

    const removed = Date.now();
    await rm(gracefulFile);
    // As the conformance test: every 200 ms for 19 s (of the 20 s grace period), the same mirror pod, Running.
    while (Date.now() - removed < (GRACE_SECONDS - 1) * 1000) {
      const pod = await getPod(namespace, name);
      const at = `${Date.now() - removed} ms after the manifest was removed`;
      assert.ok(pod !== undefined, `the mirror pod is there ${at}`);
      assert.equal(pod.metadata?.uid, mirror.metadata?.uid, `the same mirror pod ${at}`);
      assert.equal(pod.metadata?.deletionTimestamp, undefined, `the mirror pod is not being deleted ${at}`);
      assert.equal(pod.status?.phase, 'Running', `the mirror pod is Running ${at}`);
      await sleep(200);
    }
    const stillRunning = (await runtimeContainers(staticUid)).map((c) => c.state);
    assert.deepEqual(stillRunning, ['CONTAINER_RUNNING'], 'the static pod still runs out its grace period');

    // Once the grace period is over the container is killed, the pod removed, and its mirror pod deleted.
    await eventually('mirror pod gone', async () => ((await getPod(namespace, name)) === undefined ? true : undefined), 30_000);
    const gone = Date.now() - removed;
    await expectRuntime(staticUid, { sandboxes: [], containers: [] });
    console.log(`# static pod: file removed → mirror pod kept ${GRACE_SECONDS} s grace, gone after ${gone} ms`);
    assert.ok(gone >= (GRACE_SECONDS - 1) * 1000, `the mirror pod went only once the pod had terminated (${gone} ms)`);
  });

  // The node conformance test "MirrorPod when create a mirror pod without changes should
  // successfully recreate when file is removed and recreated": the same content keeps the UID, and
  // the kubelet restarts the pod (its pod worker's restartRequested): the mirror pod Running again,
  // its container at restart count 1.
  it('restarts a static pod whose manifest is removed and written back at once: same UID, a second sandbox, restart count 1, counted', async () => {
    const name = `recreated-${NODE_NAME.toLowerCase()}`;
    const content = manifest(namespace, 'sleep 3600', { name: 'recreated' });
    await writeFile(recreatedFile, content);
    const mirror = await runningMirror(namespace, name);
    const staticUid = annotation(mirror, 'kubernetes.io/config.hash') ?? '';
    await expectRuntime(staticUid, { sandboxes: ['sandbox#0:READY'], containers: ['main#0:RUNNING'] });
    const [firstSandbox] = await runtimeSandboxes(staticUid);
    const [firstContainer] = await runtimeContainers(staticUid);
    assert.ok(firstSandbox !== undefined && firstContainer !== undefined);
    const restartsBefore = await staticRestarts();

    // As the conformance test: os.Remove, then the same manifest written back at once.
    const removed = Date.now();
    await rm(recreatedFile);
    await writeFile(recreatedFile, content);

    const restarted = await eventually(
      'mirror pod Running with its container at restart count 1',
      async () => {
        const pod = await getPod(namespace, name);
        const status = pod?.status?.containerStatuses?.[0];
        return pod?.status?.phase === 'Running' && status?.state?.running !== undefined && status.restartCount === 1 ? pod : undefined;
      },
      120_000,
    );
    console.log(`# static pod: manifest removed and written back → Running again at restart count 1 in ${Date.now() - removed} ms`);
    assert.equal(annotation(restarted, 'kubernetes.io/config.hash'), staticUid, 'the same static pod UID');
    await expectRuntime(staticUid, { sandboxes: ['sandbox#0:READY'], containers: ['main#1:RUNNING'] });
    const sandboxes = await runtimeSandboxes(staticUid);
    assert.equal(sandboxes.length, 1);
    assert.notEqual(sandboxes[0]?.id, firstSandbox.id, 'a second sandbox: the first one is removed');
    const containers = await runtimeContainers(staticUid);
    assert.ok(!containers.some((c) => c.id === firstContainer.id), "the first sandbox's container is gone");
    assert.equal(restarted.status?.containerStatuses?.[0]?.containerID, `containerd://${containers[0]?.id ?? ''}`, 'the mirror pod shows the new container');
    assert.equal(await staticRestarts(), restartsBefore + 1, 'kubelet_restarted_pods_total{static="true"} counted it once');

    // As the conformance test, it stays Running (10 s here: no second restart).
    const since = Date.now();
    while (Date.now() - since < 10_000) {
      const pod = await getPod(namespace, name);
      assert.equal(pod?.status?.phase, 'Running');
      assert.equal(pod?.status?.containerStatuses?.[0]?.restartCount, 1);
      await sleep(1000);
    }
    await expectRuntime(staticUid, { sandboxes: ['sandbox#0:READY'], containers: ['main#1:RUNNING'] });

    await rm(recreatedFile);
    await eventually('mirror pod gone', async () => ((await getPod(namespace, name)) === undefined ? true : undefined));
    await expectRuntime(staticUid, { sandboxes: [], containers: [] });
  });
});
