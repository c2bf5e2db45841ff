import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { V1PersistentVolume, V1Pod, V1Volume } from '@kubernetes/client-node';
import { pino } from 'pino';
import { isVolumeError, mountFailureMessages, type VolumeError } from './errors.js';
import { createFakeVolumeSourceApi, type FakeVolumeSourceApi } from '../../test/doubles/fake-volume-source-api.js';
import { createVolumeManager } from './manager.js';
import type { VolumeManager } from './types.js';

const T0 = new Date('2024-05-01T00:00:00Z');
const UID = '6f1c2a9e-0000-4000-8000-000000000001';
const logger = pino({ level: 'silent' });
const b64 = (text: string): string => Buffer.from(text).toString('base64');

/** The projected volume the ServiceAccount admission plugin adds to every pod. */
const kubeApiAccess: V1Volume = {
  name: 'kube-api-access-abcde',
  projected: {
    defaultMode: 0o644,
    sources: [
      { serviceAccountToken: { path: 'token', expirationSeconds: 3607 } },
      { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
      { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
    ],
  },
};

function podWith(volumes: V1Volume[], extra: Partial<V1Pod['spec']> = {}): V1Pod {
  return {
    metadata: { name: 'web-0', namespace: 'shop', uid: UID, labels: { app: 'web' } },
    spec: { nodeName: 'node-a', serviceAccountName: 'default', containers: [{ name: 'app', image: 'busybox' }], volumes, ...extra },
  };
}

async function rejection(promise: Promise<unknown>): Promise<VolumeError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(isVolumeError(error), `expected a VolumeError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected prepare to fail');
}

describe('VolumeManager', () => {
  let rootDir: string;
  let now: Date;
  let api: FakeVolumeSourceApi;
  let manager: VolumeManager;
  const volumePath = (plugin: string, name: string): string => path.join(rootDir, 'pods', UID, 'volumes', `kubernetes.io~${plugin}`, name);
  const read = (file: string): Promise<string> => fs.readFile(file, 'utf8');
  const modeOf = async (file: string): Promise<number> => (await fs.stat(file)).mode & 0o7777;

  beforeEach(async () => {
    rootDir = await fs.mkdtemp(path.join(os.tmpdir(), 'nodelet-volumes-'));
    now = T0;
    api = createFakeVolumeSourceApi({ clock: () => now });
    api.configMaps.set('shop/kube-root-ca.crt', { data: { 'ca.crt': '-----BEGIN CERTIFICATE-----\n' } });
    manager = createVolumeManager({ rootDir, api, clock: () => now, logger });
  });
  afterEach(async () => {
    await fs.rm(rootDir, { recursive: true, force: true });
  });

  describe('projected service-account volume', () => {
    it('writes token, ca.crt and namespace in the kubelet layout and reports the directory', async () => {
      const prepared = await manager.prepare(podWith([kubeApiAccess]));

      const dir = volumePath('projected', 'kube-api-access-abcde');
      assert.equal(prepared.hostPaths.get('kube-api-access-abcde'), dir);
      assert.equal(prepared.readOnlyVolumes?.has('kube-api-access-abcde'), true);
      assert.equal(await read(path.join(dir, 'token')), 'token-1-default-default');
      assert.equal(await read(path.join(dir, 'ca.crt')), '-----BEGIN CERTIFICATE-----\n');
      assert.equal(await read(path.join(dir, 'namespace')), 'shop');
      assert.equal(await fs.readlink(path.join(dir, 'token')), '..data/token');
      assert.deepEqual(api.tokenRequests, [
        { namespace: 'shop', serviceAccountName: 'default', expirationSeconds: 3607, podName: 'web-0', podUid: UID },
      ]);
    });

    it('leaves files readable by a non-root container user', async () => {
      await manager.prepare(podWith([kubeApiAccess]));

      const dir = volumePath('projected', 'kube-api-access-abcde');
      assert.equal(await modeOf(path.join(dir, 'token')), 0o644);
      assert.equal(await modeOf(path.join(dir, '..data')), 0o755);
      assert.equal(await modeOf(dir), 0o777);
    });

    it('keeps the token until 80% of its lifetime, then writes a fresh one', async () => {
      const volume: V1Volume = { name: 'tok', projected: { sources: [{ serviceAccountToken: { path: 'token', audience: 'vault', expirationSeconds: 3600 } }] } };
      const pod = podWith([volume]);
      const tokenFile = path.join(volumePath('projected', 'tok'), 'token');

      await manager.prepare(pod);
      const first = await read(tokenFile);
      now = new Date(T0.getTime() + 47 * 60_000);
      await manager.prepare(pod);
      const at47 = await read(tokenFile);
      now = new Date(T0.getTime() + 49 * 60_000);
      await manager.prepare(pod);
      const at49 = await read(tokenFile);

      assert.equal(at47, first);
      assert.notEqual(at49, first);
      assert.equal(api.tokenRequests.length, 2);
      assert.equal(api.tokenRequests[0]?.audience, 'vault');
    });

    it('makes the token 0600 for the single user all containers run as', async () => {
      const pod = podWith([kubeApiAccess], { securityContext: { runAsUser: 1234 } });

      await manager.prepare(pod);

      const token = path.join(volumePath('projected', 'kube-api-access-abcde'), 'token');
      const stat = await fs.stat(token);
      assert.equal(stat.uid, 1234);
      assert.equal(stat.mode & 0o777, 0o600);
      assert.equal(await modeOf(path.join(volumePath('projected', 'kube-api-access-abcde'), 'ca.crt')), 0o644);
    });

    it('gives every file the fsGroup with group read, and the token 0640', async () => {
      const pod = podWith([kubeApiAccess], { securityContext: { fsGroup: 2345 } });

      await manager.prepare(pod);

      const dir = volumePath('projected', 'kube-api-access-abcde');
      const token = await fs.stat(path.join(dir, 'token'));
      assert.equal(token.gid, 2345);
      assert.equal(token.mode & 0o777, 0o640);
      assert.equal((await fs.stat(path.join(dir, 'ca.crt'))).gid, 2345);
      const versionDir = await fs.stat(path.join(dir, '..data'));
      assert.equal(versionDir.gid, 2345);
      assert.equal(versionDir.mode & 0o2000, 0o2000);
    });
  });

  describe('refresh (a running pod)', () => {
    const cfg: V1Volume = { name: 'cfg', configMap: { name: 'app-config' } };
    const scratch: V1Volume = { name: 'scratch', emptyDir: {} };
    const labels: V1Volume = { name: 'labels', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } };

    it('brings configMap and downwardAPI files up to date with their sources', async () => {
      api.configMaps.set('shop/app-config', { data: { 'app.yaml': 'port: 80\n' } });
      const pod = podWith([cfg, labels]);
      await manager.prepare(pod);
      api.configMaps.set('shop/app-config', { data: { 'app.yaml': 'port: 8080\n' } });
      now = new Date(T0.getTime() + 60_000);
      await manager.refresh({ ...pod, metadata: { ...pod.metadata, labels: { app: 'web', tier: 'front' } } });

      assert.equal(await read(path.join(volumePath('configmap', 'cfg'), 'app.yaml')), 'port: 8080\n');
      assert.equal(await read(path.join(volumePath('downward-api', 'labels'), 'labels')), 'app="web"\ntier="front"');
    });

    it('leaves every other volume alone (an emptyDir it did not prepare is not created)', async () => {
      api.configMaps.set('shop/app-config', { data: { 'app.yaml': 'port: 80\n' } });
      await manager.refresh(podWith([cfg, scratch]));

      assert.equal(await read(path.join(volumePath('configmap', 'cfg'), 'app.yaml')), 'port: 80\n');
      await assert.rejects(fs.stat(volumePath('empty-dir', 'scratch')), { code: 'ENOENT' });
    });

    it('fails with the volume named when its source is gone, keeping the last contents on disk', async () => {
      api.configMaps.set('shop/app-config', { data: { 'app.yaml': 'port: 80\n' } });
      const pod = podWith([cfg]);
      await manager.prepare(pod);
      api.configMaps.delete('shop/app-config');

      const error = await rejection(manager.refresh(pod));
      assert.match(error.message, /volume "cfg"/);
      assert.equal(await read(path.join(volumePath('configmap', 'cfg'), 'app.yaml')), 'port: 80\n');
    });
  });

  describe('configMap volumes', () => {
    beforeEach(() => {
      api.configMaps.set('shop/app-config', { data: { 'app.yaml': 'port: 80\n', 'log.level': 'info' }, binaryData: { 'logo.bin': b64('\x00\x01') } });
    });

    it('projects every key, text and binary, with defaultMode', async () => {
      await manager.prepare(podWith([{ name: 'cfg', configMap: { name: 'app-config', defaultMode: 0o440 } }]));

      const dir = volumePath('configmap', 'cfg');
      assert.equal(await read(path.join(dir, 'app.yaml')), 'port: 80\n');
      assert.equal(await read(path.join(dir, 'log.level')), 'info');
      assert.deepEqual(await fs.readFile(path.join(dir, 'logo.bin')), Buffer.from([0, 1]));
      assert.equal(await modeOf(path.join(dir, 'app.yaml')), 0o440);
    });

    it('projects only the listed items, at their paths and modes', async () => {
      const volume: V1Volume = { name: 'cfg', configMap: { name: 'app-config', items: [{ key: 'app.yaml', path: 'conf/app.yaml', mode: 0o600 }] } };

      await manager.prepare(podWith([volume]));

      const dir = volumePath('configmap', 'cfg');
      assert.equal(await read(path.join(dir, 'conf/app.yaml')), 'port: 80\n');
      assert.equal(await modeOf(path.join(dir, 'conf/app.yaml')), 0o600);
      assert.deepEqual((await fs.readdir(dir)).filter((e) => !e.startsWith('..')), ['conf']);
    });

    it('swaps updated contents in atomically and drops removed keys', async () => {
      const pod = podWith([{ name: 'cfg', configMap: { name: 'app-config' } }]);
      await manager.prepare(pod);
      const dir = volumePath('configmap', 'cfg');
      const oldVersion = await fs.readlink(path.join(dir, '..data'));

      api.configMaps.set('shop/app-config', { data: { 'app.yaml': 'port: 8080\n' } });
      await manager.prepare(pod);

      assert.notEqual(await fs.readlink(path.join(dir, '..data')), oldVersion);
      assert.equal(await read(path.join(dir, 'app.yaml')), 'port: 8080\n');
      assert.deepEqual((await fs.readdir(dir)).filter((e) => !e.startsWith('..')), ['app.yaml']);
    });

    it('rewrites nothing when the config map is unchanged', async () => {
      const pod = podWith([{ name: 'cfg', configMap: { name: 'app-config' } }]);
      await manager.prepare(pod);
      const version = await fs.readlink(path.join(volumePath('configmap', 'cfg'), '..data'));

      now = new Date(T0.getTime() + 5000);
      await manager.prepare(pod);

      assert.equal(await fs.readlink(path.join(volumePath('configmap', 'cfg'), '..data')), version);
    });

    it('fails with FailedMount naming the volume when the config map does not exist', async () => {
      const error = await rejection(manager.prepare(podWith([{ name: 'cfg', configMap: { name: 'nope' } }])));

      assert.equal(error.reason, 'FailedMount');
      assert.equal(error.volumeName, 'cfg');
      assert.equal(error.message, 'volume "cfg": configmap "nope" not found');
    });

    it('fails when an item names a key the config map lacks', async () => {
      const volume: V1Volume = { name: 'cfg', configMap: { name: 'app-config', items: [{ key: 'absent', path: 'x' }] } };

      const error = await rejection(manager.prepare(podWith([volume])));

      assert.equal(error.message, 'volume "cfg": configmap references non-existent config key: absent');
    });

    it('makes an empty volume for a missing optional config map, and skips missing optional keys', async () => {
      const volumes: V1Volume[] = [
        { name: 'absent', configMap: { name: 'nope', optional: true } },
        { name: 'partial', configMap: { name: 'app-config', optional: true, items: [{ key: 'absent', path: 'x' }, { key: 'log.level', path: 'level' }] } },
      ];

      const prepared = await manager.prepare(podWith(volumes));

      assert.deepEqual((await fs.readdir(volumePath('configmap', 'absent'))).filter((e) => !e.startsWith('..')), []);
      assert.equal(prepared.hostPaths.get('absent'), volumePath('configmap', 'absent'));
      assert.deepEqual((await fs.readdir(volumePath('configmap', 'partial'))).filter((e) => !e.startsWith('..')), ['level']);
    });

    it('reports an API failure as FailedMount with its cause', async () => {
      api.failWith = new Error('connect ECONNREFUSED 127.0.0.1:6443');

      const error = await rejection(manager.prepare(podWith([{ name: 'cfg', configMap: { name: 'app-config' } }])));

      assert.equal(error.message, 'volume "cfg": connect ECONNREFUSED 127.0.0.1:6443');
    });
  });

  describe('secret volumes', () => {
    it('decodes the base64 data and defaults files to 0644', async () => {
      api.secrets.set('shop/db', { data: { password: b64('s3cret'), user: b64('app') } });

      await manager.prepare(podWith([{ name: 'creds', secret: { secretName: 'db', items: [{ key: 'password', path: 'pw' }] } }]));

      const dir = volumePath('secret', 'creds');
      assert.equal(await read(path.join(dir, 'pw')), 's3cret');
      assert.equal(await modeOf(path.join(dir, 'pw')), 0o644);
      assert.deepEqual((await fs.readdir(dir)).filter((e) => !e.startsWith('..')), ['pw']);
    });

    it('fails with FailedMount when the secret does not exist unless optional', async () => {
      const error = await rejection(manager.prepare(podWith([{ name: 'creds', secret: { secretName: 'db' } }])));
      assert.equal(error.message, 'volume "creds": secret "db" not found');

      await manager.prepare(podWith([{ name: 'creds', secret: { secretName: 'db', optional: true } }]));
    });
  });

  describe('downwardAPI volumes', () => {
    it('writes the requested pod fields', async () => {
      const volume: V1Volume = {
        name: 'info',
        downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }, { path: 'node', fieldRef: { fieldPath: 'spec.nodeName' } }] },
      };

      await manager.prepare(podWith([volume]));

      const dir = volumePath('downward-api', 'info');
      assert.equal(await read(path.join(dir, 'labels')), 'app="web"');
      assert.equal(await read(path.join(dir, 'node')), 'node-a');
    });
  });

  describe('emptyDir volumes', () => {
    it('creates a world-writable directory that keeps its contents across prepares', async () => {
      // Memory-backed emptyDirs mount tmpfs: test/integration/volumes.test.ts covers them.
      const pod = podWith([{ name: 'scratch', emptyDir: {} }, { name: 'defaulted' }]);
      const prepared = await manager.prepare(pod);
      const dir = volumePath('empty-dir', 'scratch');
      await fs.writeFile(path.join(dir, 'state'), 'kept');

      await manager.prepare(pod);

      assert.equal(prepared.hostPaths.get('scratch'), dir);
      assert.equal(prepared.readOnlyVolumes?.has('scratch'), false);
      assert.equal(await modeOf(dir), 0o777);
      assert.equal(await read(path.join(dir, 'state')), 'kept');
      assert.equal(prepared.hostPaths.get('defaulted'), volumePath('empty-dir', 'defaulted'));
    });

    it('gives the directory the fsGroup and setgid', async () => {
      await manager.prepare(podWith([{ name: 'scratch', emptyDir: {} }], { securityContext: { fsGroup: 3456 } }));

      const stat = await fs.stat(volumePath('empty-dir', 'scratch'));
      assert.equal(stat.gid, 3456);
      assert.equal(stat.mode & 0o7777, 0o2777);
    });

    it('refuses HugePages media', async () => {
      const error = await rejection(manager.prepare(podWith([{ name: 'huge', emptyDir: { medium: 'HugePages' } }])));
      assert.equal(error.message, 'volume "huge": emptyDir medium "HugePages" is not supported by nodelet');
    });
  });

  describe('hostPath volumes', () => {
    it('creates a DirectoryOrCreate path and returns the path itself', async () => {
      const target = path.join(rootDir, 'host', 'data');

      const prepared = await manager.prepare(podWith([{ name: 'h', hostPath: { path: target, type: 'DirectoryOrCreate' } }]));

      assert.equal(prepared.hostPaths.get('h'), target);
      assert.equal((await fs.stat(target)).isDirectory(), true);
    });

    it('creates a FileOrCreate file and checks File and Directory types', async () => {
      const file = path.join(rootDir, 'host.conf');
      await manager.prepare(podWith([{ name: 'f', hostPath: { path: file, type: 'FileOrCreate' } }]));
      assert.equal((await fs.stat(file)).isFile(), true);

      const notDir = await rejection(manager.prepare(podWith([{ name: 'd', hostPath: { path: file, type: 'Directory' } }])));
      assert.equal(notDir.message, `volume "d": hostPath type check failed: ${file} is not a directory`);
      const missing = await rejection(manager.prepare(podWith([{ name: 'm', hostPath: { path: path.join(rootDir, 'nope'), type: 'File' } }])));
      assert.match(missing.message, /does not exist/);
    });
  });

  it('refuses unsupported volume types with the documented message', async () => {
    const error = await rejection(manager.prepare(podWith([{ name: 'data', csi: { driver: 'example.dev' } }])));

    assert.equal(error.reason, 'FailedMount');
    assert.equal(error.message, 'volume "data": csi volumes are not supported by nodelet');
  });

  describe('persistentVolumeClaim volumes', () => {
    const bind = (claimName: string, spec: NonNullable<V1PersistentVolume['spec']>): void => {
      api.claims.set(`shop/${claimName}`, { metadata: { name: claimName, namespace: 'shop', uid: `u-${claimName}` }, spec: { volumeName: `pv-${claimName}` }, status: { phase: 'Bound' } });
      api.persistentVolumes.set(`pv-${claimName}`, { metadata: { name: `pv-${claimName}` }, spec: { ...spec, claimRef: { namespace: 'shop', name: claimName, uid: `u-${claimName}` } } });
    };

    it("mounts the bound PV's host directory, read-only when the pod asks so, and gives a local PV the pod's fsGroup", async () => {
      const hostDir = path.join(rootDir, 'hostpv');
      const localDir = path.join(rootDir, 'localpv');
      await fs.mkdir(localDir);
      bind('host', { hostPath: { path: hostDir, type: 'DirectoryOrCreate' } });
      bind('local', { local: { path: localDir } });
      const prepared = await manager.prepare(podWith([
        { name: 'h', persistentVolumeClaim: { claimName: 'host', readOnly: true } },
        { name: 'l', persistentVolumeClaim: { claimName: 'local' } },
      ], { securityContext: { fsGroup: 4321 } }));

      assert.deepEqual([...prepared.hostPaths], [['h', hostDir], ['l', localDir]]);
      assert.deepEqual([...(prepared.readOnlyVolumes ?? [])], ['h']);
      assert.equal((await fs.stat(localDir)).gid, 4321);
      assert.notEqual((await fs.stat(hostDir)).gid, 4321, 'a hostPath PV keeps its ownership, as a hostPath volume does');
    });

    it('refuses a claim used as a raw block device (volumeDevices), bound or not', async () => {
      bind('raw', { hostPath: { path: path.join(rootDir, 'raw'), type: 'DirectoryOrCreate' } });
      const pod = podWith([{ name: 'r', persistentVolumeClaim: { claimName: 'raw' } }], { containers: [{ name: 'app', image: 'busybox', volumeDevices: [{ name: 'r', devicePath: '/dev/xvda' }] }] });
      const error = await rejection(manager.prepare(pod));
      assert.equal(error.message, 'volume "r": it is used in volumeDevices: raw block volumes are not supported by nodelet');
    });

    it('fails the pod\'s volumes while the claim is unbound, and mounts it once bound', async () => {
      api.claims.set('shop/late', { metadata: { name: 'late', namespace: 'shop', uid: 'u-late' }, spec: {}, status: { phase: 'Pending' } });
      const pod = podWith([{ name: 'd', persistentVolumeClaim: { claimName: 'late' } }]);
      const error = await rejection(manager.prepare(pod));
      assert.match(error.message, /^volume "d": error processing PVC shop\/late: PVC shop\/late has non-bound phase \("Pending"\)/);

      bind('late', { hostPath: { path: path.join(rootDir, 'late'), type: 'DirectoryOrCreate' } });
      assert.equal((await manager.prepare(pod)).hostPaths.get('d'), path.join(rootDir, 'late'));
    });
  });

  it('still prepares the other volumes (and refreshes the token) when one fails', async () => {
    const pod = podWith([{ name: 'cfg', configMap: { name: 'nope' } }, kubeApiAccess, { name: 'nfs', nfs: { server: 's', path: '/' } }]);

    const error = await rejection(manager.prepare(pod));

    assert.equal(error.volumeName, 'cfg');
    assert.equal(error.message, 'volume "cfg": configmap "nope" not found; volume "nfs": nfs volumes are not supported by nodelet');
    // One FailedMount event per failing volume, worded as the kubelet's operation executor.
    assert.deepEqual(mountFailureMessages(error), [
      'MountVolume.SetUp failed for volume "cfg" : configmap "nope" not found',
      'MountVolume.SetUp failed for volume "nfs" : nfs volumes are not supported by nodelet',
    ]);
    assert.equal(await read(path.join(volumePath('projected', 'kube-api-access-abcde'), 'token')), 'token-1-default-default');
  });

  it('cleanup removes the whole pod directory and can run twice; it keeps the pod\'s tokens until the pod is forgotten', async () => {
    const pod = podWith([kubeApiAccess, { name: 'scratch', emptyDir: {} }]);
    await manager.prepare(pod);

    await manager.cleanup(UID);
    await manager.cleanup(UID);

    await assert.rejects(fs.stat(path.join(rootDir, 'pods', UID)), { code: 'ENOENT' });
    await manager.prepare(pod);
    assert.equal(api.tokenRequests.length, 1, 'the cached token is reused while the pod is known');
  });

  it('forgets a pod\'s cached tokens when the pod lifecycle forgets the pod', async () => {
    const pod = podWith([kubeApiAccess]);
    await manager.prepare(pod);
    manager.podForgotten({ uid: UID, namespace: 'default', name: 'web' });
    await manager.prepare(pod);
    assert.equal(api.tokenRequests.length, 2, 'a forgotten pod asks for a new token');
  });

  it('refuses a pod without a UID or with one that is not a directory name', async () => {
    const noUid = podWith([]);
    delete noUid.metadata?.uid;
    assert.equal((await rejection(manager.prepare(noUid))).reason, 'FailedMount');

    const sneaky = podWith([]);
    sneaky.metadata = { ...sneaky.metadata, uid: '../../etc' };
    await rejection(manager.prepare(sneaky));
    await assert.rejects(manager.cleanup('../..'), /not usable as a directory name/);
  });
});
