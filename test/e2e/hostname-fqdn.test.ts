/**
 * End to end: `setHostnameAsFQDN`. With a subdomain, the container's UTS hostname (`hostname`) is
 * the pod's FQDN `<hostname>.<subdomain>.<ns>.svc.<cluster domain>`; asserted from the container
 * (its termination message), and the runtime (the sandbox's hostname, crictl inspectp). An FQDN
 * longer than 64 characters is refused as the kubelet refuses it: FailedCreatePodSandBox with its
 * message, the pod Pending, no sandbox.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { NODE_NAME, apply, createNamespace, crictl, deleteNamespace, eventually, getPod, podEvents, requireCluster, sandboxesOf } from './helpers.js';

/** The test cluster's domain (the agent's default; no NodeAgent override while this runs). */
const CLUSTER_DOMAIN = 'cluster.local';

function pod(namespace: string, name: string, hostname: string): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName: NODE_NAME,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      hostname,
      subdomain: 'backend',
      setHostnameAsFQDN: true,
      containers: [{ name: 'main', image: 'busybox:1.35', command: ['sh', '-c', 'hostname > /dev/termination-log'] }],
    },
  };
}

describe('setHostnameAsFQDN', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-fqdn');
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it("sets the container's hostname to the pod's FQDN", async () => {
    await apply(pod(namespace, 'fqdn', 'db'));
    const done = await eventually('the pod finished', async () => {
      const p = await getPod(namespace, 'fqdn');
      return p?.status?.phase === 'Succeeded' || p?.status?.phase === 'Failed' ? p : undefined;
    });
    const fqdn = `db.backend.${namespace}.svc.${CLUSTER_DOMAIN}`;
    assert.equal(done.status?.phase, 'Succeeded');
    assert.equal(done.status?.containerStatuses?.[0]?.state?.terminated?.message, `${fqdn}\n`);
    const [sandbox] = await sandboxesOf(done.metadata?.uid ?? '');
    assert.ok(sandbox !== undefined, 'the sandbox is in the runtime');
    const inspected = JSON.parse(await crictl(['inspectp', '-o', 'json', sandbox])) as { info?: { config?: { hostname?: string } } };
    assert.equal(inspected.info?.config?.hostname, fqdn);
  });

  it('gives a pod its hostnameOverride as its hostname, over hostname and subdomain, with no domain (1.37)', async () => {
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'override', namespace },
      spec: {
        nodeName: NODE_NAME,
        restartPolicy: 'Never',
        terminationGracePeriodSeconds: 1,
        hostname: 'db',
        subdomain: 'backend',
        hostnameOverride: 'override.example.host',
        containers: [{ name: 'main', image: 'busybox:1.35', command: ['sh', '-c', 'echo "$(hostname);$(hostname -f)" > /dev/termination-log'] }],
      },
    });
    const done = await eventually('the pod finished', async () => {
      const p = await getPod(namespace, 'override');
      return p?.status?.phase === 'Succeeded' || p?.status?.phase === 'Failed' ? p : undefined;
    });
    assert.equal(done.status?.containerStatuses?.[0]?.state?.terminated?.message, 'override.example.host;override.example.host\n');
    const [sandbox] = await sandboxesOf(done.metadata?.uid ?? '');
    const inspected = JSON.parse(await crictl(['inspectp', '-o', 'json', sandbox ?? ''])) as { info?: { config?: { hostname?: string } } };
    assert.equal(inspected.info?.config?.hostname, 'override.example.host');
  });

  it('refuses an FQDN longer than 64 characters: FailedCreatePodSandBox, Pending, no sandbox', async () => {
    const hostname = 'h'.repeat(40);
    await apply(pod(namespace, 'too-long', hostname));
    const fqdn = `${hostname}.backend.${namespace}.svc.${CLUSTER_DOMAIN}`;
    const event = await eventually('a FailedCreatePodSandBox event', async () => (await podEvents(namespace, 'too-long')).find((e) => e.reason === 'FailedCreatePodSandBox'));
    const uid = (await getPod(namespace, 'too-long'))?.metadata?.uid ?? '';
    assert.equal(event.type, 'Warning');
    assert.equal(
      event.message,
      `Failed to create pod sandbox: failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long (64 characters is the max, ${fqdn.length} characters requested)`,
    );
    const held = await eventually('the pod reported ContainerCreating', async () => {
      const p = await getPod(namespace, 'too-long');
      return p?.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ContainerCreating' ? p : undefined;
    });
    assert.equal(held.status?.phase, 'Pending');
    assert.deepEqual(await sandboxesOf(uid), [], 'no sandbox in the runtime');
  });
});
