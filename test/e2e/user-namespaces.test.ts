/**
 * End to end: pods in their own user namespace (`hostUsers: false`) on containerd 2, as the kubelet
 * runs them: each pod a 65536-ID range of its own, the same in the pod directory's `userns` file,
 * the OCI spec containerd made, the kernel's view from inside (`/proc/self/uid_map`) and from the
 * host (the container's root is an unprivileged host user); volumes usable from inside; the Node
 * advertises the handler's support; the kubelet's counter counts them; the file goes with the pod.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { NODE_NAME, apply, createNamespace, crictl, deleteNamespace, eventually, getPod, kubectl, requireCluster, runtimeContainers } from './helpers.js';

const ROOT_DIR = path.join(process.env.CLUSTER_DIR ?? '', 'nodelet-root');
const IDS_PER_POD = 65536;

/** A pod that prints its ID maps and identity, writes to its volumes, then sleeps. */
function userPod(namespace: string, name: string, hostUsers: boolean): object {
  const script = 'cat /proc/self/uid_map /proc/self/gid_map; id; echo written > /data/file; ls -ln /data/file; echo "config=$(cat /config/key)"; exec sleep 3600';
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName: NODE_NAME,
      hostUsers,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'main', image: 'busybox:1.35', command: ['sh', '-c', script], volumeMounts: [{ name: 'data', mountPath: '/data' }, { name: 'config', mountPath: '/config' }] }],
      volumes: [{ name: 'data', emptyDir: {} }, { name: 'config', configMap: { name: 'userns-config' } }],
    },
  };
}

/** The first line of a map file's text: container ID, host ID, length. */
function firstMapping(text: string): [number, number, number] {
  const [inside, outside, length] = (text.trim().split('\n')[0] ?? '').trim().split(/\s+/).map(Number);
  return [inside ?? NaN, outside ?? NaN, length ?? NaN];
}

async function logsWhenRunning(namespace: string, name: string): Promise<{ uid: string; logs: string }> {
  const pod = await eventually(`${name} running with its output`, async () => {
    const p = await getPod(namespace, name);
    if (p?.status?.containerStatuses?.[0]?.state?.running === undefined) return undefined;
    const logs = await kubectl(['logs', '-n', namespace, name]);
    return logs.includes('config=value') ? { p, logs } : undefined;
  }, 120_000);
  return { uid: pod.p.metadata?.uid ?? '', logs: pod.logs };
}

/** The OCI spec containerd made for a container (crictl inspect's info.runtimeSpec). */
async function runtimeSpecOf(id: string): Promise<{ pid: number; spec: { linux?: { uidMappings?: { containerID: number; hostID: number; size: number }[]; gidMappings?: { containerID: number; hostID: number; size: number }[]; namespaces?: { type: string }[] } } }> {
  const inspected = JSON.parse(await crictl(['inspect', id])) as { info: { pid: number; runtimeSpec: object } };
  return { pid: inspected.info.pid, spec: inspected.info.runtimeSpec };
}

async function startedUserNamespacedPods(): Promise<number> {
  const metrics = await kubectl(['get', '--raw', `/api/v1/nodes/${NODE_NAME}/proxy/metrics`]);
  const line = metrics.split('\n').find((l) => l.startsWith('kubelet_started_user_namespaced_pods_total '));
  return Number(line?.split(' ')[1] ?? NaN);
}

describe('pods in their own user namespace (hostUsers: false)', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-userns');
    await apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'userns-config', namespace }, data: { key: 'value' } });
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('advertises user namespaces for the default handler on the Node, as the runtime reports them', async () => {
    const node = JSON.parse(await kubectl(['get', 'node', NODE_NAME, '-o', 'json'])) as V1Node;
    const handlers = node.status?.runtimeHandlers ?? [];
    console.log(`# ${NODE_NAME} runtimeHandlers: ${JSON.stringify(handlers)}, features: ${JSON.stringify(node.status?.features)}`);
    assert.equal(handlers.find((h) => h.name === '')?.features?.userNamespaces, true);
  });

  it('gives each pod its own 65536 IDs: the same range in its userns file, the OCI spec, the kernel inside and the host outside', async () => {
    const startedBefore = await startedUserNamespacedPods();
    await apply(userPod(namespace, 'first', false));
    await apply(userPod(namespace, 'second', false));
    const ranges: number[] = [];
    for (const name of ['first', 'second']) {
      const { uid, logs } = await logsWhenRunning(namespace, name);
      const file = JSON.parse(await readFile(path.join(ROOT_DIR, 'pods', uid, 'userns'), 'utf8')) as { uidMappings: { hostId: number; containerId: number; length: number }[]; gidMappings: unknown[] };
      const hostId = file.uidMappings[0]?.hostId ?? NaN;
      assert.deepEqual(file.uidMappings, [{ hostId, containerId: 0, length: IDS_PER_POD }]);
      assert.deepEqual(file.gidMappings, file.uidMappings);
      assert.ok(hostId >= IDS_PER_POD && hostId % IDS_PER_POD === 0, `${name}: an aligned range above the host's own IDs (${hostId})`);
      const [uidMap, gidMap] = logs.split('\n').slice(0, 2);
      assert.deepEqual(firstMapping(uidMap ?? ''), [0, hostId, IDS_PER_POD], `${name}: /proc/self/uid_map inside`);
      assert.deepEqual(firstMapping(gidMap ?? ''), [0, hostId, IDS_PER_POD], `${name}: /proc/self/gid_map inside`);
      assert.match(logs, /uid=0\(root\) gid=0\(root\)/, `${name}: root inside`);
      assert.match(logs, /-rw-r--r-- +1 0 +0 .* \/data\/file/, `${name}: root inside owns what it wrote to its emptyDir`);
      const containers = await runtimeContainers(uid);
      assert.equal(containers.length, 1);
      const { pid, spec } = await runtimeSpecOf(containers[0]!.id);
      assert.deepEqual(spec.linux?.uidMappings, [{ containerID: 0, hostID: hostId, size: IDS_PER_POD }], `${name}: the OCI spec's uidMappings`);
      assert.deepEqual(spec.linux?.gidMappings, [{ containerID: 0, hostID: hostId, size: IDS_PER_POD }], `${name}: the OCI spec's gidMappings`);
      assert.ok(spec.linux?.namespaces?.some((n) => n.type === 'user'), `${name}: a user namespace in the OCI spec`);
      const status = await readFile(`/proc/${pid}/status`, 'utf8');
      const hostUid = status.split('\n').find((l) => l.startsWith('Uid:'))?.split(/\s+/)[1];
      assert.equal(hostUid, String(hostId), `${name}: its root is host user ${hostId}, not the host's root`);
      console.log(`# ${name}: IDs ${hostId}..${hostId + IDS_PER_POD - 1}; inside "${uidMap?.trim() ?? ''}"; its process on the host: uid ${hostUid}`);
      ranges.push(hostId);
    }
    assert.notEqual(ranges[0], ranges[1], 'two pods never share a range');
    const startedAfter = await startedUserNamespacedPods();
    console.log(`# kubelet_started_user_namespaced_pods_total: ${startedBefore} before, ${startedAfter} after`);
    assert.equal(startedAfter, startedBefore + 2, 'kubelet_started_user_namespaced_pods_total counts both');
  });

  it("keeps a hostUsers true pod in the host's user namespace", async () => {
    await apply(userPod(namespace, 'host-users', true));
    const { uid, logs } = await logsWhenRunning(namespace, 'host-users');
    assert.deepEqual(firstMapping(logs.split('\n')[0] ?? ''), [0, 0, 4294967295]);
    assert.equal(existsSync(path.join(ROOT_DIR, 'pods', uid, 'userns')), false, 'no userns file');
    const containers = await runtimeContainers(uid);
    const { spec } = await runtimeSpecOf(containers[0]!.id);
    assert.equal(spec.linux?.uidMappings, undefined);
    assert.ok(!(spec.linux?.namespaces ?? []).some((n) => n.type === 'user'), 'no user namespace in the OCI spec');
  });

  it('frees the range with the pod: its directory and userns file are gone once it is deleted', async () => {
    const uid = (await getPod(namespace, 'first'))?.metadata?.uid ?? '';
    await kubectl(['delete', 'pod', '-n', namespace, 'first', '--wait=true', '--timeout=60s']);
    await eventually('the pod directory removed', () => Promise.resolve(existsSync(path.join(ROOT_DIR, 'pods', uid)) ? undefined : true), 60_000);
  });
});
