/**
 * End to end: pod specs nodelet cannot run end in the kubelet's status reason and an event, and the
 * agent keeps serving other pods.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { NODE_NAME, apply, busyboxPod, createNamespace, deleteNamespace, eventually, getPod, podEvents, requireCluster, waitForPhase, waitForWaitingReason } from './helpers.js';

async function eventWith(namespace: string, name: string, reason: string, pattern: RegExp): Promise<string> {
  return eventually(`event ${reason} for ${name}`, async () => {
    const event = (await podEvents(namespace, name)).find((e) => e.reason === reason && pattern.test(e.message ?? ''));
    return event?.message;
  });
}

describe('pods nodelet cannot run', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-bad');
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('reports InvalidImageName for an unparseable image reference', async () => {
    await apply(busyboxPod({ name: 'invalid-image', namespace, nodeName: NODE_NAME, image: 'Busybox:1.35', script: 'true' }));
    const pod = await waitForWaitingReason(namespace, 'invalid-image', 'InvalidImageName');
    assert.equal(pod.status?.phase, 'Pending');
    await eventWith(namespace, 'invalid-image', 'InspectFailed', /invalid reference format/);
  });

  it('reports ErrImagePull, then ImagePullBackOff, when the registry cannot serve the image', async () => {
    await apply(busyboxPod({ name: 'no-such-image', namespace, nodeName: NODE_NAME, image: 'docker.io/library/no-such-image:1.0', script: 'true' }));
    // ErrImagePull shows until the next reconcile, which waits out the pull backoff.
    await waitForWaitingReason(namespace, 'no-such-image', 'ImagePullBackOff');
    await eventWith(namespace, 'no-such-image', 'Failed', /Failed to pull image "docker.io\/library\/no-such-image:1.0"/);
    await eventWith(namespace, 'no-such-image', 'BackOff', /Back-off pulling image "docker.io\/library\/no-such-image:1.0"/);
  });

  it('reports ErrImageNeverPull for an absent image with imagePullPolicy Never', async () => {
    await apply(busyboxPod({ name: 'never-pull', namespace, nodeName: NODE_NAME, image: 'example.com/absent:1', pullPolicy: 'Never', script: 'true' }));
    await waitForWaitingReason(namespace, 'never-pull', 'ErrImageNeverPull');
    await eventWith(namespace, 'never-pull', 'ErrImageNeverPull', /is not present with pull policy of Never/);
  });

  it('reports CreateContainerConfigError for an env var from a missing configmap', async () => {
    const env = [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'missing', key: 'x' } } }];
    await apply(busyboxPod({ name: 'missing-configmap', namespace, nodeName: NODE_NAME, env, script: 'true' }));
    const pod = await waitForWaitingReason(namespace, 'missing-configmap', 'CreateContainerConfigError');
    assert.match(pod.status?.containerStatuses?.[0]?.state?.waiting?.message ?? '', /configmap "missing" not found/);
    await eventWith(namespace, 'missing-configmap', 'Failed', /configmap "missing" not found/);
  });

  it('starts the container once the missing configmap appears', async () => {
    await apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'missing', namespace }, data: { x: 'found' } });
    const pod = await waitForPhase(namespace, 'missing-configmap', 'Running', 120_000).catch(async () => getPod(namespace, 'missing-configmap'));
    // `true` exits at once under restartPolicy Always: Running, or already restarting.
    assert.ok(pod?.status?.phase === 'Running', `phase ${pod?.status?.phase ?? 'none'}`);
  });

  it('reports FailedMount for a volume type nodelet does not support, and keeps the pod ContainerCreating', async () => {
    const manifest = busyboxPod({ name: 'nfs-volume', namespace, nodeName: NODE_NAME, script: 'true' }) as { spec: Record<string, unknown> };
    manifest.spec.volumes = [{ name: 'data', nfs: { server: '127.0.0.1', path: '/exports' } }];
    await apply(manifest);
    await eventWith(namespace, 'nfs-volume', 'FailedMount', /nfs volumes are not supported by nodelet/);
    const pod = await getPod(namespace, 'nfs-volume');
    assert.equal(pod?.status?.phase, 'Pending');
    assert.equal(pod?.status?.containerStatuses?.[0]?.state?.waiting?.reason, 'ContainerCreating');
  });

  it('keeps running healthy pods next to the broken ones', async () => {
    await apply(busyboxPod({ name: 'healthy', namespace, nodeName: NODE_NAME, script: 'sleep 3600' }));
    await waitForPhase(namespace, 'healthy', 'Running');
  });
});
