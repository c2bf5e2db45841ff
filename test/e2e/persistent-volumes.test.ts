/**
 * End to end: persistentVolumeClaim volumes backed by hostPath and local PVs on the nodelet node,
 * bound by the real PV controller. What the container writes lands in the PV's directory on the
 * host and outlives the pod; a claim that is not bound yet holds the pod in ContainerCreating with
 * the kubelet's FailedMount cause and no sandbox in the runtime, until it binds; a read-only claim
 * is mounted read-only.
 */
import assert from 'node:assert/strict';
import { mkdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NODE_NAME, apply, createNamespace, deleteNamespace, eventually, getPod, kubectl, podEvents, requireCluster, runtimeContainers, runtimeSandboxes, uniqueName, waitForPhase } from './helpers.js';

const root = path.join(process.env.CLUSTER_DIR ?? '', 'e2e-pv');

/** A PV in a storage class of its own (named like it), so the PV controller binds exactly one claim to it. */
function persistentVolume(name: string, spec: object): object {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name },
    spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Retain', storageClassName: name, ...spec },
  };
}

function claim(namespace: string, name: string, storageClassName: string): object {
  return { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace }, spec: { accessModes: ['ReadWriteOnce'], storageClassName, resources: { requests: { storage: '1Gi' } } } };
}

/** A pod named like its claim, running `script` with the claim at /data. */
function writer(namespace: string, name: string, script: string, readOnly = false): object {
  const claimName = name;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName: NODE_NAME,
      restartPolicy: 'Never',
      // `sleep` as PID 1 ignores SIGTERM: no need to wait out the default 30 s at the end.
      terminationGracePeriodSeconds: 1,
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName, readOnly } }],
      containers: [{ name: 'main', image: 'busybox:1.35', command: ['sh', '-c', script], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
    },
  };
}

async function claimPhase(namespace: string, name: string): Promise<string> {
  return (await kubectl(['get', 'pvc', name, '-n', namespace, '-o', 'jsonpath={.status.phase}'])).trim();
}

describe('persistentVolumeClaim volumes on the nodelet node', () => {
  let namespace = '';
  const volumes: string[] = [];

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-pv');
    await mkdir(root, { recursive: true });
  });

  after(async () => {
    if (namespace !== '') {
      await deleteNamespace(namespace);
      // Its pods must be gone before their volumes' host directories are removed below, and before
      // the next suite counts the cluster's pods.
      const started = Date.now();
      await eventually(`the pods of ${namespace} to be gone`, async () => ((await kubectl(['get', 'pods', '-n', namespace, '-o', 'name'])).trim() === '' ? true : undefined), 120_000);
      console.log(`# pods of ${namespace} gone ${((Date.now() - started) / 1000).toFixed(1)} s after the namespace's deletion`);
    }
    for (const pv of volumes) await kubectl(['delete', 'pv', pv, '--ignore-not-found', '--wait=false']);
    await rm(root, { recursive: true, force: true });
  });

  it("writes through a bound hostPath PV into the PV's host directory, which outlives the pod", async () => {
    const id = uniqueName('host');
    const dir = path.join(root, id);
    volumes.push(id);
    await apply(persistentVolume(id, { hostPath: { path: dir, type: 'DirectoryOrCreate' } }));
    await apply(claim(namespace, id, id));
    await eventually(`claim ${id} to bind`, async () => ((await claimPhase(namespace, id)) === 'Bound' ? true : undefined));
    await apply(writer(namespace, id, 'echo written-by-$(hostname) > /data/out'));
    const done = await waitForPhase(namespace, id, 'Succeeded');
    assert.equal(await readFile(path.join(dir, 'out'), 'utf8'), `written-by-${id}\n`);
    await kubectl(['delete', 'pod', id, '-n', namespace, '--wait=true']);
    assert.equal(await readFile(path.join(dir, 'out'), 'utf8'), `written-by-${id}\n`, 'the data outlives the pod');
    assert.equal(done.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 0);
  });

  it('holds the pod in ContainerCreating with FailedMount and no sandbox while its claim is unbound, then runs it on a local PV once bound', async () => {
    const id = uniqueName('late');
    const dir = path.join(root, id);
    await mkdir(dir);
    await apply(claim(namespace, id, id));
    await apply(writer(namespace, id, 'id -G > /data/groups; sleep 3600'));
    const event = await eventually('a FailedMount event naming the unbound claim', async () => {
      const found = (await podEvents(namespace, id)).find((e) => e.reason === 'FailedMount');
      return found?.message;
    });
    assert.match(event, new RegExp(`error processing PVC ${namespace}/${id}: PVC ${namespace}/${id} has non-bound phase \\("Pending"\\)`));
    const waiting = await getPod(namespace, id);
    assert.equal(waiting?.status?.phase, 'Pending');
    assert.equal(waiting?.status?.containerStatuses?.[0]?.state?.waiting?.reason, 'ContainerCreating');
    const uid = waiting?.metadata?.uid ?? '';
    assert.deepEqual(await runtimeSandboxes(uid), [], 'no sandbox while a volume is not ready');

    volumes.push(id);
    const onThisNode = { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [NODE_NAME] }] }] } };
    await apply(persistentVolume(id, { local: { path: dir }, nodeAffinity: onThisNode }));
    await waitForPhase(namespace, id, 'Running', 180_000);
    assert.equal((await runtimeSandboxes(uid)).length, 1, 'one sandbox once bound');
    assert.deepEqual((await runtimeContainers(uid)).map((c) => c.state), ['CONTAINER_RUNNING']);
    await eventually('the container to write into the local PV', async () => ((await readFile(path.join(dir, 'groups'), 'utf8').catch(() => '')) !== '' ? true : undefined));
  });

  it('mounts a read-only claim read-only', async () => {
    const id = uniqueName('ro');
    const dir = path.join(root, id);
    volumes.push(id);
    await apply(persistentVolume(id, { hostPath: { path: dir, type: 'DirectoryOrCreate' } }));
    await apply(claim(namespace, id, id));
    await eventually(`claim ${id} to bind`, async () => ((await claimPhase(namespace, id)) === 'Bound' ? true : undefined));
    await apply(writer(namespace, id, 'if touch /data/x 2>/dev/termination-log; then exit 0; else exit 3; fi', true));
    const done = await waitForPhase(namespace, id, 'Failed');
    const terminated = done.status?.containerStatuses?.[0]?.state?.terminated;
    assert.equal(terminated?.exitCode, 3);
    assert.match(terminated?.message ?? '', /Read-only file system/);
  });

  it('runs a pod with a generic ephemeral volume on the claim the controller made for it', async () => {
    const id = uniqueName('eph');
    const dir = path.join(root, id);
    volumes.push(id);
    await apply(persistentVolume(id, { hostPath: { path: dir, type: 'DirectoryOrCreate' } }));
    const template = { spec: { accessModes: ['ReadWriteOnce'], storageClassName: id, resources: { requests: { storage: '1Gi' } } } };
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: id, namespace },
      spec: {
        nodeName: NODE_NAME,
        restartPolicy: 'Never',
        volumes: [{ name: 'scratch', ephemeral: { volumeClaimTemplate: template } }],
        containers: [{ name: 'main', image: 'busybox:1.35', command: ['sh', '-c', 'echo ephemeral > /scratch/out'], volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] }],
      },
    });
    await waitForPhase(namespace, id, 'Succeeded', 180_000);
    assert.equal(await readFile(path.join(dir, 'out'), 'utf8'), 'ephemeral\n');
    assert.equal(await claimPhase(namespace, `${id}-scratch`), 'Bound', 'the controller-made claim <pod>-<volume>');
  });
});
