/**
 * The CSI node side over real gRPC on unix sockets: the test driver (`test/doubles/test-csi-driver.ts`)
 * registers through a plugins_registry/ socket, the CSIPlugin handler records it (a recording
 * CSINode API), and the volume manager stages and publishes a PVC-bound CSI PV and an inline
 * ephemeral volume with real bind mounts (the machine runs as root), then tears them down in the
 * kubelet's order with nothing left in the mount table.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1CSIDriver, V1Node, V1Pod } from '@kubernetes/client-node';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { pino } from 'pino';
import { systemClock } from '../../util/clock.js';
import { TestRegistrationSocket } from '../../test/doubles/test-device-plugin.js';
import { TestCsiDriver } from '../../test/doubles/test-csi-driver.js';
import { createFakeVolumeSourceApi } from '../../test/doubles/fake-volume-source-api.js';
import { createVolumeManager } from '../../reconcilers/volumes/manager.js';
import { CsiDriverStore, type CsiNodeInfo, type CsiVolumeApi } from '../../reconcilers/volumes/csi/types.js';
import { mountFailureMessages } from '../../reconcilers/volumes/errors.js';
import { attachmentName } from '../../reconcilers/volumes/csi/paths.js';
import { CsiPluginHandler, highestSupportedVersion } from './csi-plugin-handler.js';
import { csiNodeDriverOf, driversOf, driversWith, nodeIdAnnotation, topologyCollision, type CsiNodeInfoApi } from './csi-node-info.js';
import { PluginWatcher } from './plugin-watcher.js';
import { until } from '../../test/doubles/until.js';

const logger = pino({ level: 'silent' });
const root = mkdtempSync(path.join(tmpdir(), 'nodelet-csi-'));
const DRIVER = 'test.csi.nodelet.dev';
const UID = 'c5e1a0f2-0000-4000-8000-00000000c51a';

const mountsUnder = (dir: string): string[] => readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((l) => l.split(' ')[4] ?? '').filter((p) => p.startsWith(dir));

function recordingNodeInfo(): CsiNodeInfoApi & { installed: Map<string, CsiNodeInfo> } {
  const installed = new Map<string, CsiNodeInfo>();
  return {
    installed,
    installDriver: (name, info) => { installed.set(name, info); return Promise.resolve(); },
    uninstallDriver: (name) => { installed.delete(name); return Promise.resolve(); },
  };
}

describe('CSI node records (pure)', () => {
  it('the CSINode entry: topology keys sorted, allocatable only when positive; unchanged entries are not rewritten', () => {
    const entry = csiNodeDriverOf('d', { nodeId: 'n1', maxVolumesPerNode: 8, topology: { 'zone/b': 'x', 'zone/a': 'y' } });
    assert.deepEqual(entry, { name: 'd', nodeID: 'n1', topologyKeys: ['zone/a', 'zone/b'], allocatable: { count: 8 } });
    assert.deepEqual(csiNodeDriverOf('d', { nodeId: 'n1', maxVolumesPerNode: 0, topology: {} }), { name: 'd', nodeID: 'n1', topologyKeys: [] });
    assert.equal(driversWith([entry], entry), undefined);
    assert.deepEqual(driversWith([{ name: 'other', nodeID: 'o' }, { ...entry, nodeID: 'old' }], entry), [{ name: 'other', nodeID: 'o' }, entry]);
    // A CSINode whose last driver went comes back from the API server with drivers: null.
    const emptied = JSON.parse('{"metadata":{"name":"vm"},"spec":{"drivers":null}}') as Parameters<typeof driversOf>[0];
    assert.deepEqual(driversOf(emptied), []);
    assert.deepEqual(driversWith(driversOf(emptied), entry), [entry]);
  });

  it('topology collisions and the node ID annotation', () => {
    assert.equal(topologyCollision({ zone: 'a' }, { zone: 'a' }), undefined);
    assert.equal(topologyCollision({ zone: 'a' }, { zone: 'b' }), 'detected topology value collision: driver reported "zone":"b" but existing label is "zone":"a"');
    assert.equal(nodeIdAnnotation(undefined, 'd', 'n1'), '{"d":"n1"}');
    assert.equal(nodeIdAnnotation('{"d":"n1","e":"n2"}', 'd', undefined), '{"e":"n2"}');
    assert.equal(nodeIdAnnotation('{"d":"n1"}', 'd', undefined), undefined);
  });

  it('versions: the highest 1.x, never 0.x or 2.x alone (HighestSupportedVersion)', () => {
    assert.deepEqual(highestSupportedVersion(['1.0.0', '1.5.0', '2.0.0']), { version: [1, 5, 0] });
    assert.ok('error' in highestSupportedVersion(['0.3.0']));
    assert.ok('error' in highestSupportedVersion(['2.0.0']));
    assert.ok('error' in highestSupportedVersion([]));
  });
});

describe('a CSI driver registered, staged, published and torn down (real gRPC, real bind mounts)', () => {
  const registry = path.join(root, 'plugins_registry');
  const driverSocket = path.join(root, 'plugins', DRIVER, 'csi.sock');
  const regSocket = path.join(registry, `${DRIVER}-reg.sock`);
  const driver = new TestCsiDriver({ name: DRIVER, socketPath: driverSocket, dataDir: path.join(root, 'data'), nodeId: 'node-a-id', topology: { 'topology.test.csi/node': 'node-a' }, maxVolumesPerNode: 16, capabilities: ['STAGE_UNSTAGE_VOLUME'], mount: true });
  const registration = new TestRegistrationSocket(regSocket, { type: 'CSIPlugin', name: DRIVER, endpoint: driverSocket, supportedVersions: ['1.0.0'] });
  const store = new CsiDriverStore();
  const nodeInfo = recordingNodeInfo();
  const watcher = new PluginWatcher({ dir: registry, handlers: { CSIPlugin: new CsiPluginHandler({ store, nodeInfo, logger }) }, clock: systemClock, logger });
  const csiDriverObject: V1CSIDriver = { metadata: { name: DRIVER }, spec: { attachRequired: false, podInfoOnMount: true, fsGroupPolicy: 'File', volumeLifecycleModes: ['Persistent', 'Ephemeral'] } };
  const csiApi: CsiVolumeApi = { readCSIDriver: () => Promise.resolve(csiDriverObject), readVolumeAttachment: () => Promise.resolve(undefined), readNode: () => Promise.resolve<V1Node | undefined>(undefined) };
  const api = createFakeVolumeSourceApi();
  const volumes = (): ReturnType<typeof createVolumeManager> => createVolumeManager({ rootDir: root, api, logger, csi: { drivers: store, api: csiApi, nodeName: 'node-a' } });
  const pod: V1Pod = {
    metadata: { name: 'db-0', namespace: 'shop', uid: UID },
    spec: {
      serviceAccountName: 'db',
      securityContext: { fsGroup: 2000 },
      containers: [{ name: 'db', image: 'busybox' }],
      volumes: [
        { name: 'data', persistentVolumeClaim: { claimName: 'data-db-0' } },
        { name: 'scratch', csi: { driver: DRIVER, volumeAttributes: { size: '1Mi' } } },
      ],
    },
  };

  before(async () => {
    mkdirSync(path.dirname(driverSocket), { recursive: true });
    mkdirSync(registry, { recursive: true });
    await driver.start();
    api.claims.set('shop/data-db-0', { metadata: { name: 'data-db-0', namespace: 'shop', uid: 'claim-uid' }, spec: { volumeName: 'pv-data' }, status: { phase: 'Bound' } });
    api.persistentVolumes.set('pv-data', { metadata: { name: 'pv-data' }, spec: { accessModes: ['ReadWriteOnce'], mountOptions: ['noatime'], claimRef: { name: 'data-db-0', namespace: 'shop', uid: 'claim-uid' }, csi: { driver: DRIVER, volumeHandle: 'vol-data', fsType: 'ext4', volumeAttributes: { tier: 'gold' } } } });
  });
  after(async () => {
    await watcher.stop();
    registration.stop();
    driver.stop();
    for (const point of mountsUnder(root).sort((a, b) => b.length - a.length)) rmSync(point, { force: true, recursive: false });
    rmSync(root, { recursive: true, force: true });
  });

  it('registers through plugins_registry/: NodeGetInfo into the CSINode records, the driver in the store', async () => {
    await registration.start();
    await watcher.start();
    await until('the driver registered', () => store.client(DRIVER) !== undefined);
    assert.deepEqual(nodeInfo.installed.get(DRIVER), { nodeId: 'node-a-id', maxVolumesPerNode: 16, topology: { 'topology.test.csi/node': 'node-a' } });
    assert.deepEqual(registration.statuses, [{ pluginRegistered: true, error: '' }]);
  });

  it('stages the PV at the global path and publishes both volumes into the pod, mounted, with the kubelet\'s requests', async () => {
    const prepared = await volumes().prepare(pod);
    const target = path.join(root, 'pods', UID, 'volumes', 'kubernetes.io~csi', 'pv-data', 'mount');
    const inline = path.join(root, 'pods', UID, 'volumes', 'kubernetes.io~csi', 'scratch', 'mount');
    assert.equal(prepared.hostPaths.get('data'), target);
    assert.equal(prepared.hostPaths.get('scratch'), inline);
    const [stage] = driver.calledWith('NodeStageVolume');
    assert.match(String(stage?.stagingTargetPath), /\/plugins\/kubernetes\.io\/csi\/test\.csi\.nodelet\.dev\/[0-9a-f]{64}\/globalmount$/);
    assert.deepEqual(stage?.volumeCapability, { accessMode: { mode: 'SINGLE_NODE_WRITER' }, mount: { fsType: 'ext4', mountFlags: ['noatime'], volumeMountGroup: '' } });
    const publishes = driver.calledWith('NodePublishVolume');
    assert.equal(publishes.length, 2);
    const persistent = publishes.find((p) => p.volumeId === 'vol-data');
    assert.equal(persistent?.stagingTargetPath, stage?.stagingTargetPath);
    assert.deepEqual(persistent?.volumeContext, { tier: 'gold', 'csi.storage.k8s.io/pod.name': 'db-0', 'csi.storage.k8s.io/pod.namespace': 'shop', 'csi.storage.k8s.io/pod.uid': UID, 'csi.storage.k8s.io/serviceAccount.name': 'db', 'csi.storage.k8s.io/ephemeral': 'false' });
    const ephemeral = publishes.find((p) => p.volumeId !== 'vol-data');
    assert.equal(ephemeral?.stagingTargetPath, '');
    assert.equal((ephemeral?.volumeContext as Record<string, string>)['csi.storage.k8s.io/ephemeral'], 'true');
    assert.ok(mountsUnder(root).includes(target) && mountsUnder(root).includes(inline), 'both targets are mount points');
    const volData: unknown = JSON.parse(readFileSync(path.join(path.dirname(target), 'vol_data.json'), 'utf8'));
    assert.deepEqual(volData, { specVolID: 'pv-data', volumeHandle: 'vol-data', driverName: DRIVER, nodeName: 'node-a', volumeLifecycleMode: 'Persistent', attachmentID: attachmentName('vol-data', DRIVER, 'node-a') });
    // fsGroupPolicy File: the kubelet gives the published volume the pod's group
    assert.equal(statSync(target).gid, 2000);
    writeFileSync(path.join(target, 'f'), 'x');
    assert.ok(existsSync(path.join(driver.backingDir('vol-data'), 'f')), 'the write reached the backing directory through the mounts');
  });

  it('reports the persistent volume in use, and after an agent restart sets up again idempotently', async () => {
    const fresh = volumes();
    assert.deepEqual(fresh.volumesInUse?.(), [`kubernetes.io/csi/${DRIVER}^vol-data`]);
    await fresh.prepare(pod);
    assert.equal(mountsUnder(path.join(root, 'pods', UID)).length, 2, 'nothing mounted twice');
  });

  it('tears down in the kubelet\'s order: unpublish both, then unstage; nothing left mounted', async () => {
    driver.calls.length = 0;
    await volumes().teardown(UID);
    assert.deepEqual(driver.calls.map((c) => c.method).filter((m) => m !== 'NodeGetCapabilities'), ['NodeUnpublishVolume', 'NodeUnpublishVolume', 'NodeUnstageVolume']);
    assert.deepEqual(mountsUnder(root), []);
    assert.equal(existsSync(path.join(root, 'plugins', 'kubernetes.io', 'csi', DRIVER)) && existsSync(String(driver.calledWith('NodeUnstageVolume')[0]?.stagingTargetPath)), false);
    await volumes().cleanup(UID);
  });

  it('a driver error ends in the kubelet\'s FailedMount message; a gone driver deregisters', async () => {
    driver.failures.set('NodePublishVolume', { code: GrpcStatus.INTERNAL, message: 'backend down' });
    const onlyInline: V1Pod = { ...pod, spec: { ...pod.spec, containers: [], volumes: [pod.spec?.volumes?.[1] ?? { name: 'x' }] } };
    const error = await volumes().prepare(onlyInline).then(() => undefined, (e: unknown) => e);
    assert.deepEqual(mountFailureMessages(error), ['MountVolume.SetUp failed for volume "scratch" : rpc error: code = Internal desc = backend down']);
    assert.equal(existsSync(path.join(root, 'pods', UID, 'volumes', 'kubernetes.io~csi', 'scratch')), false, 'a failed publish leaves no directory');
    driver.failures.clear();
    registration.stop();
    rmSync(regSocket, { force: true });
    await until('the driver deregistered', () => store.client(DRIVER) === undefined && !nodeInfo.installed.has(DRIVER));
    const missing = await volumes().prepare(onlyInline).then(() => undefined, (e: unknown) => e);
    assert.deepEqual(mountFailureMessages(missing), [`MountVolume.SetUp failed for volume "scratch" : kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: driver name ${DRIVER} not found in the list of registered CSI drivers`]);
  });

  it('a staged volume left over by a driver that is gone never holds another pod\'s teardown', async () => {
    const leftover = path.join(root, 'plugins', 'kubernetes.io', 'csi', 'gone.csi.example', 'abc');
    mkdirSync(path.join(leftover, 'globalmount'), { recursive: true });
    writeFileSync(path.join(leftover, 'vol_data.json'), JSON.stringify({ driverName: 'gone.csi.example', volumeHandle: 'h' }));
    await volumes().teardown('d0d0d0d0-0000-4000-8000-000000000000');
    assert.ok(existsSync(path.join(leftover, 'vol_data.json')), 'kept for a later teardown once its driver is back');
  });
});
