/**
 * End to end: what nodelet cannot run is refused visibly, as the kubelet refuses it, and never
 * reaches the runtime. `os.name: windows` is rejected at admission (Failed, PodOSNotSupported);
 * `hostUsers: false` on a RuntimeClass whose handler the runtime does not list, `resourceClaims`
 * (no DRA), `volumeDevices` (raw block, through its PVC volume) and a `podCertificate` projection
 * hold the pod Pending with the kubelet's Warning event. Each is asserted from the API (phase, reason, message, the event) and the
 * runtime (crictl: no sandbox, no container for the pod's UID). (A `RestartAllContainers` restart
 * rule, once refused here, runs: `restart-all-containers.test.ts`.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { NODE_NAME, apply, containersOf, createNamespace, deleteNamespace, eventually, getPod, kubectl, podEvents, requireCluster, sandboxesOf } from './helpers.js';

/** A RuntimeClass whose handler the runtime does not have (cluster-scoped: removed in after()). */
const RUNTIME_CLASS = 'e2e-refuse-unknown-handler';

function pod(namespace: string, name: string, spec: Record<string, unknown>, container: Record<string, unknown> = {}): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: { nodeName: NODE_NAME, restartPolicy: 'Never', terminationGracePeriodSeconds: 1, ...spec, containers: [{ name: 'main', image: 'busybox:1.35', command: ['sleep', '3600'], ...container }] },
  };
}

async function assertNothingInRuntime(p: V1Pod): Promise<void> {
  const uid = p.metadata?.uid ?? '';
  assert.deepEqual(await sandboxesOf(uid), [], 'no sandbox in the runtime');
  assert.deepEqual(await containersOf(uid), [], 'no container in the runtime');
}

/** Waits for the Warning event `reason`, then checks the pod is Pending, ContainerCreating, with nothing in the runtime. */
async function assertHeldPending(namespace: string, name: string, reason: string, message: string | RegExp): Promise<void> {
  const event = await eventually(`a ${reason} event for ${name}`, async () => (await podEvents(namespace, name)).find((e) => e.reason === reason));
  assert.equal(event.type, 'Warning');
  if (typeof message === 'string') assert.equal(event.message, message);
  else assert.match(event.message ?? '', message);
  const held = await eventually(`${name} reported ContainerCreating`, async () => {
    const p = await getPod(namespace, name);
    return p?.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ContainerCreating' ? p : undefined;
  });
  assert.equal(held.status?.phase, 'Pending');
  await assertNothingInRuntime(held);
  console.log(`${name}: ${reason} event count ${event.count ?? 1}`);
}

describe('pods nodelet cannot run are refused visibly', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-refuse');
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
    await kubectl(['delete', 'runtimeclass', RUNTIME_CLASS, '--ignore-not-found']);
  });

  it('rejects os.name windows at admission: Failed, PodOSNotSupported, an event, no sandbox', async () => {
    await apply(pod(namespace, 'windows', { os: { name: 'windows' } }));
    const failed = await eventually('the pod Failed', async () => {
      const p = await getPod(namespace, 'windows');
      return p?.status?.phase === 'Failed' ? p : undefined;
    });
    assert.equal(failed.status?.reason, 'PodOSNotSupported');
    assert.equal(failed.status?.message, "Pod was rejected: Failed to admit pod as the OS field doesn't match node OS");
    const events = (await podEvents(namespace, 'windows')).filter((e) => e.reason === 'PodOSNotSupported');
    assert.equal(events.length, 1);
    assert.equal(events[0]?.type, 'Warning');
    assert.equal(events[0]?.message, "Failed to admit pod as the OS field doesn't match node OS");
    await assertNothingInRuntime(failed);
  });

  it("holds hostUsers false Pending when its RuntimeClass's handler is not one the runtime lists: FailedCreatePodSandBox", async () => {
    await apply({ apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name: RUNTIME_CLASS }, handler: 'no-such-handler' });
    await apply(pod(namespace, 'userns', { hostUsers: false, runtimeClassName: RUNTIME_CLASS }));
    await assertHeldPending(namespace, 'userns', 'FailedCreatePodSandBox', `Failed to create pod sandbox: can't set \`spec.hostUsers: false\`, RuntimeClass handler "no-such-handler" does not support user namespaces: the handler "no-such-handler" is not known`);
  });

  it('holds a pod with resource claims Pending: FailedPrepareDynamicResources', async () => {
    await apply(pod(namespace, 'dra', { resourceClaims: [{ name: 'gpu', resourceClaimName: 'gpu-claim' }] }));
    await assertHeldPending(namespace, 'dra', 'FailedPrepareDynamicResources', 'Failed to prepare dynamic resources: nodelet has no dynamic resource allocation (no DRA driver is registered on this node): cannot prepare resource claims "gpu"');
  });

  it('holds a pod with a podCertificate projection Pending: FailedMount', async () => {
    const source = { podCertificate: { signerName: 'e2e.nodelet.dev/pods', keyType: 'ECDSAP256', credentialBundlePath: 'bundle.pem' } };
    await apply(pod(namespace, 'podcert', { volumes: [{ name: 'cert', projected: { sources: [source] } }] }, { volumeMounts: [{ name: 'cert', mountPath: '/cert' }] }));
    await assertHeldPending(namespace, 'podcert', 'FailedMount', /^MountVolume.SetUp failed for volume "cert" : projected source podCertificate is not supported by nodelet$/);
  });

  it('holds a pod with volumeDevices Pending: its claim volume fails to mount', async () => {
    await apply(pod(namespace, 'block', { volumes: [{ name: 'raw', persistentVolumeClaim: { claimName: 'block-claim' } }] }, { volumeDevices: [{ name: 'raw', devicePath: '/dev/xvdz' }] }));
    await assertHeldPending(namespace, 'block', 'FailedMount', /^MountVolume.SetUp failed for volume "raw" : it is used in volumeDevices: raw block volumes are not supported by nodelet$/);
  });
});
