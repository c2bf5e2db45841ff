/**
 * The volume manager against the test cluster's real kube-apiserver (admin KUBECONFIG from
 * `.cluster/env`). It creates a namespace, a config map, a secret and a pod bound to a node that
 * does not exist (no kubelet runs it), prepares the pod's volumes with the real API client, checks
 * the files, and has the API server's TokenReview accept the projected service-account tokens.
 * Everything is deleted afterwards. The pod-GC controller deletes pods of unknown nodes after ~40 s,
 * so the checks after creating the pod stay quick.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { ApiException, AuthenticationV1Api, CoreV1Api, KubeConfig, type V1Pod, type V1Volume } from '@kubernetes/client-node';
import { pino } from 'pino';
import { createVolumeManager, createVolumeSourceApi, isVolumeError, type VolumeManager } from '../../reconcilers/volumes/index.js';
import { mountsUnder, readMounts, unmountAllUnder } from '../../reconcilers/volumes/mounts-table.js';
import { createFakeVolumeSourceApi } from '../doubles/fake-volume-source-api.js';
import { kubeClientFrom } from '../doubles/kube-client.js';

const logger = pino({ level: process.env.LOG_LEVEL ?? 'silent' });
const FAKE_NODE = 'nodelet-volumes-test-node';
const AUDIENCE = 'nodelet-volumes-test';

/** Polls `read` until it yields a value; fails with `what` after `timeoutMs`. */
async function eventually<T>(read: () => Promise<T | undefined>, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await read();
    if (value !== undefined) return value;
    await sleep(250);
  }
  assert.fail(`timed out waiting for ${what}`);
}

async function orUndefined<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof ApiException && error.code === 404) return undefined;
    throw error;
  }
}

const read = (file: string): Promise<string> => fs.readFile(file, 'utf8');

describe('volumes against the real API server', () => {
  const kubeconfigPath = process.env.KUBECONFIG ?? '';
  const namespace = `nodelet-volumes-${randomBytes(4).toString('hex')}`;
  const kubeConfig = new KubeConfig();
  let core: CoreV1Api;
  let rootDir: string;
  let manager: VolumeManager;
  let pod: V1Pod;
  let caBundle: string;

  before(async () => {
    assert.ok(kubeconfigPath !== '', 'KUBECONFIG is not set: run `npm run cluster:up` and `source .cluster/env`');
    kubeConfig.loadFromFile(kubeconfigPath);
    core = kubeConfig.makeApiClient(CoreV1Api);
    rootDir = await fs.mkdtemp(path.join(os.tmpdir(), 'nodelet-volumes-it-'));
    manager = createVolumeManager({ rootDir, api: createVolumeSourceApi(kubeClientFrom(kubeconfigPath)), logger });

    await core.createNamespace({ body: { metadata: { name: namespace } } });
    // The controller-manager creates these shortly after the namespace; TokenRequest needs the SA.
    await eventually(() => orUndefined(() => core.readNamespacedServiceAccount({ namespace, name: 'default' })), 'serviceaccount default');
    const rootCa = await eventually(() => orUndefined(() => core.readNamespacedConfigMap({ namespace, name: 'kube-root-ca.crt' })), 'configmap kube-root-ca.crt');
    caBundle = rootCa.data?.['ca.crt'] ?? '';
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'app-config' }, data: { 'app.yaml': 'port: 80\n', other: 'x' } } });
    await core.createNamespacedSecret({ namespace, body: { metadata: { name: 'db' }, stringData: { password: 's3cret' } } });

    const volumes: V1Volume[] = [
      { name: 'cfg', configMap: { name: 'app-config', items: [{ key: 'app.yaml', path: 'conf/app.yaml', mode: 0o600 }] } },
      { name: 'creds', secret: { secretName: 'db' } },
      { name: 'info', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
      { name: 'scratch', emptyDir: {} },
      { name: 'audience-token', projected: { sources: [{ serviceAccountToken: { path: 'token', audience: AUDIENCE, expirationSeconds: 600 } }] } },
    ];
    pod = await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'web', labels: { app: 'web', tier: 'front' } },
        spec: {
          nodeName: FAKE_NODE,
          containers: [{ name: 'app', image: 'docker.io/library/busybox:1.35', command: ['sleep', '3600'] }],
          volumes,
        },
      },
    });
  });

  after(async () => {
    if (core !== undefined) {
      await orUndefined(() => core.deleteNamespace({ name: namespace, propagationPolicy: 'Background' }));
    }
    if (manager !== undefined && pod?.metadata?.uid !== undefined) await manager.cleanup(pod.metadata.uid);
    if (rootDir !== undefined) await fs.rm(rootDir, { recursive: true, force: true });
  });

  const volumeDir = (plugin: string, name: string): string =>
    path.join(rootDir, 'pods', pod.metadata?.uid ?? '', 'volumes', `kubernetes.io~${plugin}`, name);

  async function review(token: string, audiences?: string[]): Promise<{ authenticated: boolean; username: string; extra: Record<string, string[]> }> {
    const auth = kubeConfig.makeApiClient(AuthenticationV1Api);
    const result = await auth.createTokenReview({ body: { spec: { token, ...(audiences === undefined ? {} : { audiences }) } } });
    return {
      authenticated: result.status?.authenticated === true,
      username: result.status?.user?.username ?? '',
      extra: result.status?.user?.extra ?? {},
    };
  }

  it('prepares the admission-added kube-api-access volume with a token the API server accepts', async () => {
    const accessVolume = pod.spec?.volumes?.find((v) => v.name.startsWith('kube-api-access-'));
    assert.ok(accessVolume, 'the ServiceAccount admission plugin added kube-api-access-<x>');

    const prepared = await manager.prepare(pod);

    const dir = volumeDir('projected', accessVolume.name);
    assert.equal(prepared.hostPaths.get(accessVolume.name), dir);
    assert.equal(await read(path.join(dir, 'namespace')), namespace);
    assert.equal(await read(path.join(dir, 'ca.crt')), caBundle);
    assert.match(caBundle, /BEGIN CERTIFICATE/);
    const token = await read(path.join(dir, 'token'));
    const result = await review(token);
    assert.equal(result.authenticated, true);
    assert.equal(result.username, `system:serviceaccount:${namespace}:default`);
    assert.deepEqual(result.extra['authentication.kubernetes.io/pod-name'], ['web']);
    assert.deepEqual(result.extra['authentication.kubernetes.io/pod-uid'], [pod.metadata?.uid]);
  });

  it('requests the audience a projection names', async () => {
    await manager.prepare(pod);

    const token = await read(path.join(volumeDir('projected', 'audience-token'), 'token'));
    assert.equal((await review(token, [AUDIENCE])).authenticated, true);
  });

  it('projects the config map items, the decoded secret, the pod labels and an emptyDir', async () => {
    const prepared = await manager.prepare(pod);

    const cfg = path.join(volumeDir('configmap', 'cfg'), 'conf/app.yaml');
    assert.equal(await read(cfg), 'port: 80\n');
    assert.equal((await fs.stat(cfg)).mode & 0o777, 0o600);
    assert.equal(await read(path.join(volumeDir('secret', 'creds'), 'password')), 's3cret');
    assert.equal(await read(path.join(volumeDir('downward-api', 'info'), 'labels')), 'app="web"\ntier="front"');
    assert.equal((await fs.stat(volumeDir('empty-dir', 'scratch'))).isDirectory(), true);
    assert.equal(prepared.readOnlyVolumes?.has('creds'), true);
  });

  it('picks up a config map update on the next prepare', async () => {
    await core.replaceNamespacedConfigMap({
      namespace,
      name: 'app-config',
      body: { metadata: { name: 'app-config' }, data: { 'app.yaml': 'port: 8080\n' } },
    });

    await manager.prepare(pod);

    assert.equal(await read(path.join(volumeDir('configmap', 'cfg'), 'conf/app.yaml')), 'port: 8080\n');
  });

  it('reports a missing config map as FailedMount and tolerates a missing optional secret', async () => {
    const ghost: V1Pod = {
      metadata: { name: 'ghost', namespace, uid: `ghost-${randomBytes(4).toString('hex')}` },
      spec: {
        containers: [],
        volumes: [
          { name: 'maybe', secret: { secretName: 'absent', optional: true } },
          { name: 'cfg', configMap: { name: 'absent' } },
        ],
      },
    };

    await assert.rejects(manager.prepare(ghost), (error: unknown) => {
      assert.ok(isVolumeError(error));
      assert.equal(error.reason, 'FailedMount');
      assert.equal(error.message, 'volume "cfg": configmap "absent" not found');
      return true;
    });
    await manager.cleanup(ghost.metadata?.uid ?? '');
  });

  it('cleanup removes the pod directory', async () => {
    const uid = pod.metadata?.uid ?? '';
    await manager.prepare(pod);

    await manager.cleanup(uid);

    await assert.rejects(fs.stat(path.join(rootDir, 'pods', uid)), { code: 'ENOENT' });
  });
});

describe('memory-backed emptyDir volumes on this host', () => {
  it('mounts a tmpfs of the computed size, once, and unmounts it with the pod', async () => {
    const rootDir = await fs.mkdtemp(path.join(os.tmpdir(), 'nodelet-volumes-tmpfs-'));
    // An emptyDir reads nothing from the API.
    const noApi = createFakeVolumeSourceApi();
    const manager = createVolumeManager({ rootDir, api: noApi, logger, nodeAllocatableMemoryBytes: 2 ** 30 });
    const uid = `tmpfs-${randomBytes(4).toString('hex')}`;
    const memPod: V1Pod = {
      metadata: { name: 'mem', namespace: 'default', uid },
      spec: { containers: [{ name: 'app', image: 'busybox:1.35' }], volumes: [{ name: 'cache', emptyDir: { medium: 'Memory', sizeLimit: '16Mi' } }] },
    };
    const dir = path.join(rootDir, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'cache');
    try {
      await manager.prepare(memPod);
      await manager.prepare(memPod);
      const mounts = (await readMounts()).filter((m) => m.mountPoint === dir);
      assert.equal(mounts.length, 1, 'mounted once, even when prepared twice');
      assert.equal(mounts[0]?.fsType, 'tmpfs');
      assert.match(mounts[0]?.superOptions ?? '', /(^|,)size=16384k(,|$)/);
      assert.equal((await fs.stat(dir)).mode & 0o777, 0o777);
      await fs.writeFile(path.join(dir, 'fits'), Buffer.alloc(8 * 2 ** 20));
      await assert.rejects(fs.writeFile(path.join(dir, 'too-big'), Buffer.alloc(12 * 2 ** 20)), { code: 'ENOSPC' });
      await manager.cleanup(uid);
      assert.deepEqual(await mountsUnder(rootDir), [], 'nothing stays mounted');
      await assert.rejects(fs.stat(path.join(rootDir, 'pods', uid)), { code: 'ENOENT' });
    } finally {
      await unmountAllUnder(rootDir);
      await fs.rm(rootDir, { recursive: true, force: true });
    }
  });
});
