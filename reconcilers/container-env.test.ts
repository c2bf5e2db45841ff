import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { resolveContainerEnv, type EnvSourceApi } from './container-env.js';
import { isContainerStartError } from './sync-errors.js';

const api: EnvSourceApi = {
  readConfigMap: (_ns, name) => Promise.resolve(name === 'cfg' ? { data: { color: 'blue', size: 'L' } } : undefined),
  readSecret: (_ns, name) => Promise.resolve(name === 'sec' ? { data: { token: Buffer.from('s3cret').toString('base64') } } : undefined),
};
const pod: V1Pod = { metadata: { name: 'web', namespace: 'ns', uid: 'u1', labels: { app: 'web' } }, spec: { nodeName: 'node-a', containers: [] } };

async function envOf(container: Partial<V1Container>): Promise<Record<string, string>> {
  const env = await resolveContainerEnv({ pod, container: { name: 'c', ...container }, api, podIps: ['10.214.0.7'], nodeIp: '10.213.0.1', nodeAllocatable: { milliCpu: 2000, memoryBytes: 1024 } });
  return Object.fromEntries(env.map((e) => [e.key, e.value]));
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
});
