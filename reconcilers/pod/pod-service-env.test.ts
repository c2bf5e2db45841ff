/**
 * Component tests of the service environment variables through the assembled per-pod machinery
 * and the recording fake runtime: what each created container's config carries, and that no
 * container is created before the node's service lister has synced.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import type { ContainerConfig } from '../../cri/types.js';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';
import { basePod, UID } from '../../test/doubles/pod-fixtures.js';

let h: ReconcilerHarness | undefined;
afterEach(async () => {
  await h?.cleanup();
  h = undefined;
});

const KUBERNETES: V1Service = { metadata: { namespace: 'default', name: 'kubernetes' }, spec: { clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443, protocol: 'TCP' }] } };
const BACKEND: V1Service = { metadata: { namespace: 'apps', name: 'backend' }, spec: { clusterIP: '10.96.0.7', ports: [{ port: 8080 }] } };
const ELSEWHERE: V1Service = { metadata: { namespace: 'other', name: 'elsewhere' }, spec: { clusterIP: '10.96.0.8', ports: [{ port: 80 }] } };

function envOfCreated(harness: ReconcilerHarness): Record<string, string>[] {
  return harness.runtime.callsTo('createContainer').map((c) => Object.fromEntries(((c.args[1] as ContainerConfig).envs ?? []).map((e) => [e.key, e.value])));
}

describe('service environment variables in the created containers', () => {
  it("gives every container its namespace's services and the kubernetes service, user env winning", async () => {
    h = await createReconcilerHarness();
    h.services.items.push(KUBERNETES, BACKEND, ELSEWHERE);
    h.store.set(UID, basePod((p) => {
      p.metadata!.namespace = 'apps';
      p.spec!.containers[0]!.env = [{ name: 'BACKEND_SERVICE_PORT', value: '1' }, { name: 'URL', value: 'http://$(BACKEND_SERVICE_HOST):$(BACKEND_SERVICE_PORT)' }];
    }));
    await h.reconciler().reconcile({ ...ref, namespace: 'apps' });
    const [app, sidecar] = envOfCreated(h);
    assert.equal(app?.BACKEND_SERVICE_HOST, '10.96.0.7');
    assert.equal(app?.BACKEND_PORT_8080_TCP, 'tcp://10.96.0.7:8080');
    assert.equal(app?.BACKEND_SERVICE_PORT, '1', 'the user env wins');
    assert.equal(app?.URL, 'http://10.96.0.7:1', '$(VAR) sees the service variables and the override');
    assert.equal(sidecar?.BACKEND_SERVICE_PORT, '8080');
    assert.equal(sidecar?.KUBERNETES_SERVICE_HOST, '10.96.0.1');
    assert.equal(sidecar?.KUBERNETES_SERVICE_PORT_HTTPS, '443');
    assert.ok(!Object.keys(sidecar ?? {}).some((k) => k.startsWith('ELSEWHERE_')), 'no variables of another namespace');
  });

  it('gives only the KUBERNETES_ variables with enableServiceLinks false', async () => {
    h = await createReconcilerHarness();
    h.services.items.push(KUBERNETES, BACKEND);
    h.store.set(UID, basePod((p) => {
      p.metadata!.namespace = 'apps';
      p.spec!.enableServiceLinks = false;
    }));
    await h.reconciler().reconcile({ ...ref, namespace: 'apps' });
    const envs = envOfCreated(h);
    assert.equal(envs.length, 2);
    for (const env of envs) {
      assert.deepEqual(Object.keys(env).filter((k) => k.includes('_SERVICE_') || k.includes('_PORT')).filter((k) => !k.startsWith('KUBERNETES_')), []);
      assert.equal(env.KUBERNETES_SERVICE_HOST, '10.96.0.1');
    }
  });

  it('creates no container before the services synced: CreateContainerConfigError with an event, then starts once they have', async () => {
    h = await createReconcilerHarness();
    h.services.synced = false;
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref).catch(() => undefined);
    assert.equal(h.runtime.callsTo('createContainer').length, 0, 'no container created');
    const message = 'services have not yet been read at least once, cannot construct envvars';
    const waiting = h.status.last()?.containerStatuses?.map((c) => c.state?.waiting);
    assert.deepEqual(waiting, [{ reason: 'CreateContainerConfigError', message }, { reason: 'CreateContainerConfigError', message }]);
    assert.ok(h.events.events.some((e) => e.reason === 'Failed' && e.message === `Error: ${message}`));

    h.services.synced = true;
    h.services.items.push(KUBERNETES);
    await h.reconciler().reconcile(ref).catch(() => undefined);
    const envs = envOfCreated(h);
    assert.equal(envs.length, 2);
    assert.ok(envs.every((e) => e.KUBERNETES_SERVICE_HOST === '10.96.0.1'));
  });
});
