/** The pod of a gone UID, restored from the annotations its containers were created with. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Container } from '@kubernetes/client-node';
import { buildContainerConfig } from '../container/container-config.js';
import type { ObservedContainer } from '../model/observed-pod.js';
import { restorePod } from './restored-pod.js';
import { DEFAULT_MASKED_PATHS } from '../container/security-context.js';
import { basePod } from '../../test/doubles/pod-fixtures.js';

function observed(name: string, annotations: Record<string, string>): ObservedContainer {
  return { id: `c-${name}`, name, sandboxId: 'sb', state: 'CONTAINER_RUNNING', restartCount: 0, specHash: '', image: '', imageRef: '', createdAt: new Date(0), exitCode: 0, reason: '', message: '', annotations };
}

describe('a gone pod restored from its containers', () => {
  it('round-trips the preStop handler and the ports written at creation (a named httpGet port resolves)', () => {
    const container: V1Container = {
      name: 'web',
      image: 'busybox',
      ports: [{ name: 'http', containerPort: 8080 }],
      lifecycle: { preStop: { httpGet: { path: '/quit', port: 'http', httpHeaders: [{ name: 'X', value: 'y' }] } } },
    };
    const security = { seccompProfileRoot: '/var/lib/nodelet/seccomp', seccompDefault: false, maskedPaths: DEFAULT_MASKED_PATHS };
    const config = buildContainerConfig({ pod: basePod(), container, kind: 'regular', restartCount: 0, imageRef: 'busybox', env: [], mounts: [], nodeName: 'n', memoryCapacityBytes: 0, security, imageUser: { uid: 0n } });
    const pod = restorePod({ uid: 'u', name: 'p', namespace: 'ns' }, [observed('web', config.annotations), observed('web', {}), observed('plain', {})], 12);
    assert.deepEqual(pod.metadata, { name: 'p', namespace: 'ns', uid: 'u' });
    assert.equal(pod.spec?.terminationGracePeriodSeconds, 12);
    assert.deepEqual(pod.spec?.containers, [{ name: 'web', lifecycle: { preStop: container.lifecycle?.preStop }, ports: container.ports }, { name: 'plain' }], 'one per name, the newest instance');
  });

  it('restores a container without a hook when the annotation is not a handler', () => {
    const pod = restorePod({ uid: 'u', name: 'p', namespace: 'ns' }, [observed('a', { 'io.kubernetes.container.preStopHandler': '{broken', 'io.kubernetes.container.ports': '{"not":"a list"}' })], 2);
    assert.deepEqual(pod.spec?.containers, [{ name: 'a' }]);
  });
});
