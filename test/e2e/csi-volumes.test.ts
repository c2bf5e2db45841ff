/**
 * CSI volumes end to end, with the test CSI driver (`test/doubles/test-csi-driver.ts`, run as a
 * host process by `test-csi-driver-main.ts`: the node plugin a DaemonSet would run, registering
 * through nodelet's `<root>/plugins_registry/` as node-driver-registrar would, and bind-mounting a
 * directory per volume as a real node plugin mounts its disks).
 *
 * Checks: the driver's CSINode entry (node ID, topology key) and the Node's topology label; a pod
 * with a PVC bound to a CSI PV and an inline ephemeral CSI volume runs, the volumes are mounted
 * inside the container (written through to the driver's backing directory) and on the host (the
 * staging path and both target paths in the mount table); deleting the pod unpublishes and
 * unstages, leaving nothing mounted; the driver going away takes it out of the CSINode.
 *
 * UNRUN when written (no cluster in that session). Run it alone against the test cluster:
 *   npm run cluster:up && bash test/run-suite.sh e2e test/e2e/csi-volumes.test.ts
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1CSINode, V1Node, V1Pod } from '@kubernetes/client-node';
import { apply, createNamespace, deleteNamespace, eventually, hostMountsUnder, kubectl, NODE_NAME, requireCluster, uniqueName, waitForPhase } from './helpers.js';

const REPO = path.resolve(import.meta.dirname, '../..');
/** The agent's `--root-dir` (test/cluster/lib/agent.sh). */
const AGENT_ROOT = path.join(process.env.CLUSTER_DIR ?? '', 'nodelet-root');
const DRIVER = 'test.csi.nodelet.dev';
const DATA_DIR = path.join(process.env.CLUSTER_DIR ?? '/tmp', 'test-csi-data');
const TOPOLOGY_KEY = 'topology.test.csi.nodelet.dev/node';

let driver: ChildProcess | undefined;
let namespace = '';
const pvName = uniqueName('csi-pv');
const handle = uniqueName('vol');

async function csiNodeDriver(): Promise<{ nodeID: string; topologyKeys?: string[] } | undefined> {
  const out = await kubectl(['get', 'csinode', NODE_NAME, '-o', 'json', '--ignore-not-found']);
  if (out.trim() === '') return undefined;
  // An empty list comes back as null (Go's nil slice, the field has no omitempty).
  return ((JSON.parse(out) as V1CSINode).spec.drivers as V1CSINode['spec']['drivers'] | null ?? []).find((d) => d.name === DRIVER);
}

function csiPod(name: string): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName: NODE_NAME,
      terminationGracePeriodSeconds: 1,
      securityContext: { fsGroup: 2000 },
      containers: [{ name: 'main', image: 'busybox:1.35', command: ['sh', '-c', 'echo hello > /data/hello && echo scratch > /scratch/s && sleep 3600'], volumeMounts: [{ name: 'data', mountPath: '/data' }, { name: 'scratch', mountPath: '/scratch' }] }],
      volumes: [
        { name: 'data', persistentVolumeClaim: { claimName: 'data' } },
        { name: 'scratch', csi: { driver: DRIVER, volumeAttributes: { purpose: 'scratch' } } },
      ],
    },
  };
}

/** The test driver as a host process: it serves its CSI socket and registers through plugins_registry/. */
function startDriver(): ChildProcess {
  return spawn('node', ['--import', 'tsx', path.join(REPO, 'test/doubles/test-csi-driver-main.ts'), DRIVER, AGENT_ROOT, DATA_DIR], { cwd: REPO, stdio: ['ignore', 'inherit', 'inherit'] });
}

describe('CSI volumes through a registered CSI driver', () => {
  before(async () => {
    requireCluster();
    namespace = await createNamespace('csi');
    await apply({ apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name: DRIVER }, spec: { attachRequired: false, podInfoOnMount: true, fsGroupPolicy: 'File', volumeLifecycleModes: ['Persistent', 'Ephemeral'] } });
    driver = startDriver();
  });

  after(async () => {
    driver?.kill('SIGTERM');
    await deleteNamespace(namespace);
    await kubectl(['delete', 'pv', pvName, '--ignore-not-found', '--wait=false']);
    await kubectl(['delete', 'csidriver', DRIVER, '--ignore-not-found']);
  });

  it('registers: the CSINode lists the driver with its node ID and topology key, the Node carries the label', async () => {
    const entry = await eventually('the driver in the CSINode', csiNodeDriver, 60_000);
    assert.equal(entry.nodeID, `${DRIVER}-node`);
    assert.deepEqual(entry.topologyKeys, [TOPOLOGY_KEY]);
    const node = JSON.parse(await kubectl(['get', 'node', NODE_NAME, '-o', 'json'])) as V1Node;
    assert.equal(node.metadata?.labels?.[TOPOLOGY_KEY], 'local');
    assert.match(node.metadata?.annotations?.['csi.volume.kubernetes.io/nodeid'] ?? '', new RegExp(`"${DRIVER.replace(/\./g, '\\.')}":"${DRIVER.replace(/\./g, '\\.')}-node"`));
  });

  it('mounts a PVC-bound CSI PV and an inline ephemeral volume into the container, and tears them down leaving nothing mounted', async () => {
    await apply({ apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: pvName }, spec: { capacity: { storage: '1Mi' }, accessModes: ['ReadWriteOnce'], storageClassName: '', persistentVolumeReclaimPolicy: 'Retain', claimRef: { namespace, name: 'data' }, csi: { driver: DRIVER, volumeHandle: handle, fsType: 'ext4' } } });
    await apply({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'data', namespace }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: '', volumeName: pvName, resources: { requests: { storage: '1Mi' } } } });
    await eventually('the claim bound', async () => ((await kubectl(['get', 'pvc', 'data', '-n', namespace, '-o', 'jsonpath={.status.phase}'])) === 'Bound' ? true : undefined));
    await apply(csiPod('app'));
    const pod: V1Pod = await waitForPhase(namespace, 'app', 'Running', 120_000);
    const uid = pod.metadata?.uid ?? '';
    // Inside the container: both paths are mounts, the write went through to the driver's backing directory.
    const inside = await kubectl(['exec', '-n', namespace, 'app', '--', 'sh', '-c', 'grep -E " /(data|scratch) " /proc/mounts | wc -l; cat /data/hello']);
    assert.deepEqual(inside.trim().split('\n'), ['2', 'hello']);
    assert.equal(readFileSync(path.join(DATA_DIR, handle, 'hello'), 'utf8'), 'hello\n');
    // On the host: the staging path and both target paths.
    const podVolumes = path.join(AGENT_ROOT, 'pods', uid, 'volumes', 'kubernetes.io~csi');
    assert.deepEqual((await hostMountsUnder(podVolumes)).sort(), [path.join(podVolumes, pvName, 'mount'), path.join(podVolumes, 'scratch', 'mount')].sort());
    const staging = path.join(AGENT_ROOT, 'plugins', 'kubernetes.io', 'csi', DRIVER);
    assert.equal((await hostMountsUnder(staging)).length, 1, 'the PV is staged once at its global mount');
    assert.ok(existsSync(path.join(podVolumes, pvName, 'vol_data.json')));

    await kubectl(['delete', 'pod', 'app', '-n', namespace, '--wait=true', '--timeout=120s']);
    await eventually('nothing mounted for the pod or the volume', async () => ((await hostMountsUnder(path.join(AGENT_ROOT, 'pods', uid))).length === 0 && (await hostMountsUnder(staging)).length === 0 ? true : undefined), 60_000);
    assert.equal(existsSync(path.join(AGENT_ROOT, 'pods', uid)), false, "the pod's directory is gone");
    assert.equal(readFileSync(path.join(DATA_DIR, handle, 'hello'), 'utf8'), 'hello\n', 'the data outlives the pod');
  });

  it('deregisters: the driver going away takes it out of the CSINode; started again, it is back', async () => {
    driver?.kill('SIGTERM');
    driver = undefined;
    await eventually('the driver out of the CSINode', async () => ((await csiNodeDriver()) === undefined ? true : undefined), 60_000);
    // The CSINode now has no driver at all (drivers: null from the API server): a restarted driver registers again.
    driver = startDriver();
    const entry = await eventually('the restarted driver in the CSINode', csiNodeDriver, 60_000);
    assert.equal(entry.nodeID, `${DRIVER}-node`);
  });
});
