import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Container, V1Pod, V1Service } from '@kubernetes/client-node';
import { resolveContainerEnv, type EnvSourceApi } from './container-env.js';
import type { ServiceLister } from './service-env.js';
import { isContainerStartError } from '../model/sync-errors.js';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';

const api: EnvSourceApi = {
  readConfigMap: (_ns, name) => Promise.resolve(name === 'cfg' ? { data: { color: 'blue', size: 'L' } } : undefined),
  readSecret: (_ns, name) => Promise.resolve(name === 'sec' ? { data: { token: Buffer.from('s3cret').toString('base64') } } : undefined),
};
const pod: V1Pod = { metadata: { name: 'web', namespace: 'ns', uid: 'u1', labels: { app: 'web' } }, spec: { nodeName: 'node-a', containers: [] } };

const noServices: ServiceLister = { hasSynced: () => true, list: () => [] };

async function envListOf(container: Partial<V1Container>, services = noServices, forPod = pod): Promise<{ key: string; value: string }[]> {
  return resolveContainerEnv({ pod: forPod, container: { name: 'c', ...container }, api, services, podIps: ['10.214.0.7'], nodeIp: '10.213.0.1', nodeAllocatable: { milliCpu: 2000, memoryBytes: 1024 } });
}

async function envOf(container: Partial<V1Container>, services = noServices, forPod = pod): Promise<Record<string, string>> {
  return Object.fromEntries((await envListOf(container, services, forPod)).map((e) => [e.key, e.value]));
}

function service(namespace: string, name: string, clusterIP: string, port = 80): V1Service {
  return { metadata: { namespace, name }, spec: { clusterIP, ports: [{ port }] } };
}

describe('container environment', () => {
  it('expands $(VAR) against variables defined before it', async () => {
    assert.deepEqual(await envOf({ env: [{ name: 'A', value: 'x' }, { name: 'B', value: '$(A)-y' }] }), { A: 'x', B: 'x-y' });
  });

  it('resolves field, configmap and secret references', async () => {
    const env = await envOf({
      env: [
        { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        { name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
        { name: 'APP', valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
        { name: 'COLOR', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'color' } } },
        { name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'sec', key: 'token' } } },
      ],
    });
    assert.deepEqual(env, { POD: 'web', IP: '10.214.0.7', APP: 'web', COLOR: 'blue', TOKEN: 's3cret' });
  });

  it('takes envFrom first, with its prefix, and lets env override it', async () => {
    const env = await envOf({ envFrom: [{ configMapRef: { name: 'cfg' }, prefix: 'CFG_' }], env: [{ name: 'CFG_size', value: 'S' }] });
    assert.deepEqual(env, { CFG_color: 'blue', CFG_size: 'S' });
  });

  it('skips an optional reference that is missing', async () => {
    assert.deepEqual(await envOf({ env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'nope', key: 'k', optional: true } } }] }), {});
  });

  it('fails with CreateContainerConfigError naming a missing configmap', async () => {
    const error = await envOf({ env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'nope', key: 'k' } } }] }).then(() => undefined, (e: unknown) => e);
    assert.ok(isContainerStartError(error));
    assert.equal(error.reason, 'CreateContainerConfigError');
    assert.equal(error.message, 'configmap "nope" not found');
  });

  it('fails with CreateContainerConfigError naming a missing key', async () => {
    await assert.rejects(envOf({ env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'sec', key: 'nope' } } }] }), /couldn't find key nope in Secret ns\/sec/);
  });

  describe('fileKeyRef (env files in an emptyDir)', () => {
    let volume = '';
    const errors: string[] = [];
    before(async () => {
      volume = await mkdtemp(path.join(os.tmpdir(), 'file-key-ref-'));
      await writeFile(path.join(volume, 'config.env'), "CONFIG_1='value1'\nEMPTY=''\n");
      await writeFile(path.join(volume, 'bad.env'), 'CONFIG_1=value1\n');
      await symlink('/etc/hostname', path.join(volume, 'escape.env'));
    });
    after(async () => {
      await rm(volume, { recursive: true, force: true });
    });
    const ref = (key: string, file = 'config.env', optional?: boolean): { name: string; valueFrom: object } => ({
      name: `V_${key}`,
      valueFrom: { fileKeyRef: { volumeName: 'data', path: file, key, ...(optional === undefined ? {} : { optional }) } },
    });
    const envWithFiles = (env: object[]): Promise<{ key: string; value: string }[]> =>
      resolveContainerEnv({
        pod,
        container: { name: 'c', env: env as V1Container['env'] },
        api,
        services: noServices,
        podIps: [],
        nodeIp: '10.213.0.1',
        nodeAllocatable: { milliCpu: 2000, memoryBytes: 1024 },
        volumeHostPaths: new Map([['data', volume]]),
        logEnvFileError: (e) => errors.push(e.message),
      });
    const configError = (message: string) => (e: unknown) => isContainerStartError(e) && e.reason === 'CreateContainerConfigError' && e.message === message;

    it('reads the key from the file in the volume; an optional missing or empty key is skipped', async () => {
      assert.deepEqual(await envWithFiles([ref('CONFIG_1'), ref('MISSING', 'config.env', true), ref('EMPTY', 'config.env', true)]), [{ key: 'V_CONFIG_1', value: 'value1' }]);
    });

    it("fails with the kubelet's messages: a missing key (an empty value counts as missing), an unknown volume, a bad file", async () => {
      await assert.rejects(envWithFiles([ref('MISSING')]), configError(`environment variable key "MISSING" not found in file "${path.join(volume, 'config.env')}"`));
      await assert.rejects(envWithFiles([ref('EMPTY')]), configError(`environment variable key "EMPTY" not found in file "${path.join(volume, 'config.env')}"`));
      await assert.rejects(envWithFiles([{ name: 'X', valueFrom: { fileKeyRef: { volumeName: 'other', path: 'a', key: 'k' } } }]), configError('cannot find the volume "other" referenced by FileKeyRef'));
      await assert.rejects(envWithFiles([ref('CONFIG_1', 'bad.env')]), configError("couldn't parse env file"));
      assert.match(errors.at(-1) ?? '', /value must be enclosed in single quotes/);
    });

    it('never reads a file outside the volume through a symlink, even for an optional key', async () => {
      await assert.rejects(envWithFiles([ref('CONFIG_1', 'escape.env', true)]), configError("couldn't parse env file"));
      assert.match(errors.at(-1) ?? '', /no such file or directory/);
    });
  });

  describe('service variables', () => {
    const services: ServiceLister = {
      hasSynced: () => true,
      list: () => [service('default', 'kubernetes', '10.96.0.1', 443), service('ns', 'db', '10.96.0.20', 5432), service('other', 'cache', '10.96.0.30')],
    };

    it('come first, in service order, and env overrides them without moving or duplicating them', async () => {
      const env = await envListOf({ env: [{ name: 'DB_SERVICE_HOST', value: 'mine' }, { name: 'A', value: 'x' }] }, services);
      const keys = env.map((e) => e.key);
      assert.equal(keys[0], 'DB_SERVICE_HOST', 'the first service variable leads');
      assert.equal(keys.filter((k) => k === 'DB_SERVICE_HOST').length, 1, 'no duplicate key');
      assert.equal(env[0]?.value, 'mine', 'the user env wins');
      assert.equal(keys.at(-1), 'A', 'the user env follows the service variables');
      assert.ok(keys.includes('KUBERNETES_SERVICE_HOST'));
      assert.ok(!keys.some((k) => k.startsWith('CACHE_')), 'services of other namespaces are not seen');
    });

    it('can be referred to by $(VAR) in env, command and args', async () => {
      const env = await envOf({ env: [{ name: 'URL', value: 'pg://$(DB_SERVICE_HOST):$(DB_SERVICE_PORT)' }] }, services);
      assert.equal(env.URL, 'pg://10.96.0.20:5432');
    });

    it('with enableServiceLinks false are only the kubernetes service ones', async () => {
      const env = await envOf({}, services, { ...pod, spec: { containers: [], enableServiceLinks: false } });
      assert.deepEqual(Object.keys(env).filter((k) => !k.startsWith('KUBERNETES_')), []);
      assert.equal(env.KUBERNETES_SERVICE_HOST, '10.96.0.1');
    });

    it('are never silently missing: before the services are listed once, the container config fails', async () => {
      const unsynced: ServiceLister = { hasSynced: () => false, list: () => [] };
      const error = await envOf({}, unsynced).then(() => undefined, (e: unknown) => e);
      assert.ok(isContainerStartError(error));
      assert.equal(error.reason, 'CreateContainerConfigError');
      assert.equal(error.message, 'services have not yet been read at least once, cannot construct envvars');
    });
  });
});
