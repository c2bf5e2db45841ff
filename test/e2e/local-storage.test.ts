/**
 * End to end: local storage limits (controllers/eviction/local-storage.ts) on the test cluster,
 * with no node pressure at all. Two pods at once, each writing a few MiB past a limit:
 *
 * - `emptydir`: an emptyDir with `sizeLimit: 4Mi` gets 8 MiB;
 * - `container`: container `writer` (limit `ephemeral-storage: 8Mi`) writes 16 MiB into its
 *   writable layer, beside `idle` (limit 100Mi), so the pod's total (108Mi) is not exceeded and the
 *   container's own limit is the one that applies.
 *
 * Each must end Failed, reason Evicted, the kubelet's message, no DisruptionTarget condition (the
 * kubelet adds none on this path), a Warning `Evicted` event with the same message, every
 * container exited in the runtime (crictl), and the emptyDir removed from disk. Prints how long
 * each took from Running to Failed.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { NODE_NAME, apply, createNamespace, deleteNamespace, eventually, getPod, podEvents, requireCluster, runtimeContainers, waitForPhase } from './helpers.js';

const AGENT_ROOT = path.join(process.env.CLUSTER_DIR ?? '', 'nodelet-root');

function podManifest(namespace: string, name: string, spec: Record<string, unknown>): object {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace }, spec: { nodeName: NODE_NAME, restartPolicy: 'Never', terminationGracePeriodSeconds: 5, ...spec } };
}

function container(name: string, script: string, limit: string): object {
  return { name, image: 'busybox:1.35', command: ['sh', '-c', script], resources: { limits: { 'ephemeral-storage': limit } } };
}

async function waitFailed(namespace: string, name: string): Promise<V1Pod> {
  return eventually(`pod ${namespace}/${name} to be Failed`, async () => {
    const pod = await getPod(namespace, name);
    return pod?.status?.phase === 'Failed' ? pod : undefined;
  }, 90_000);
}

/** The checks both evicted pods share: status, event, runtime. */
async function assertEvicted(namespace: string, pod: V1Pod, message: string): Promise<void> {
  const name = pod.metadata?.name ?? '';
  assert.equal(pod.status?.reason, 'Evicted', `${name}: reason`);
  assert.equal(pod.status?.message, message, `${name}: the kubelet's message`);
  assert.equal(pod.status?.conditions?.find((c) => c.type === 'DisruptionTarget'), undefined, `${name}: no DisruptionTarget on a local storage eviction`);
  const events = await eventually(`${name}: the Evicted event`, async () => {
    const found = (await podEvents(namespace, name)).filter((e) => e.reason === 'Evicted');
    return found.length > 0 ? found : undefined;
  });
  assert.deepEqual(events.map((e) => [e.type, e.message]), [['Warning', message]], `${name}: one Warning Evicted event with the message`);
  // Once the API shows the eviction, every dead container of the pod is removed (the kubelet's
  // HandlePodReconcile); the status keeps their terminated states.
  await eventually(`${name}: its dead containers removed from the runtime`, async () => ((await runtimeContainers(pod.metadata?.uid ?? '')).length === 0 ? true : undefined), 30_000);
  const statuses = (await getPod(namespace, name))?.status?.containerStatuses ?? [];
  assert.ok(statuses.length >= 1 && statuses.every((c) => c.state?.terminated !== undefined), `${name}: container statuses stay terminated: ${JSON.stringify(statuses.map((c) => c.state))}`);
}

describe('local storage limits', { timeout: 300_000 }, () => {
  let namespace = '';
  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-localstorage');
  });
  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('evicts a pod over its emptyDir sizeLimit and a pod whose container exceeds its ephemeral-storage limit', async () => {
    await apply(
      podManifest(namespace, 'emptydir', {
        volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '4Mi' } }],
        containers: [{ ...container('main', 'dd if=/dev/zero of=/scratch/fill bs=1M count=8 && sync && sleep 3600', '100Mi'), volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] }],
      }),
    );
    await apply(podManifest(namespace, 'container', { containers: [container('writer', 'dd if=/dev/zero of=/fill bs=1M count=16 && sync && sleep 3600', '8Mi'), container('idle', 'sleep 3600', '100Mi')] }));
    const running = await Promise.all(['emptydir', 'container'].map((name) => waitForPhase(namespace, name, 'Running')));
    const runningAt = Date.now();
    const uid = running[0]?.metadata?.uid ?? '';
    const emptyDir = path.join(AGENT_ROOT, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'scratch');
    const [overEmptyDir, overContainer] = await Promise.all(['emptydir', 'container'].map(async (name) => ({ pod: await waitFailed(namespace, name), at: Date.now() })));
    assert.ok(overEmptyDir !== undefined && overContainer !== undefined);
    await assertEvicted(namespace, overEmptyDir.pod, 'Usage of EmptyDir volume "scratch" exceeds the limit "4Mi". ');
    await assertEvicted(namespace, overContainer.pod, 'Container writer exceeded its local ephemeral storage limit "8Mi". ');
    await eventually('the evicted pod\'s emptyDir removed', () => Promise.resolve(existsSync(emptyDir) ? undefined : true), 60_000);
    console.log(`[local-storage] emptyDir pod Failed/Evicted ${overEmptyDir.at - runningAt} ms after both Running; container pod ${overContainer.at - runningAt} ms (eviction period 10 s)`);
  });
});
