/**
 * End to end: a `restartPolicyRules` rule with the action `RestartAllContainers` (the kubelet's
 * RestartAllContainersOnContainerExits, beta and on since 1.36) restarts the whole pod in place.
 * A pod with an init container and two regular containers, one of which exits with the listed
 * code: every container is removed from the runtime and runs again from the init container, in the
 * same sandbox. Asserted on the runtime (crictl: the sandbox's ID unchanged, every old container ID
 * gone, new instances counting on as attempt 1) and on the API (restart counts, last states, the
 * AllContainersRestarting condition, the `Killing` event of the container stopped for it), as the
 * kubelet reports them; and no second restart follows. An exit code no rule lists restarts nothing.
 * The Node declares the feature, so the scheduler places such a pod on it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import {
  NODE_NAME,
  apply,
  containerStatusOf,
  createNamespace,
  deleteNamespace,
  eventually,
  expectRuntime,
  getPod,
  kubectl,
  podEvents,
  requireCluster,
  runtimeContainers,
  runtimeSandboxes,
  type RuntimeContainer,
} from './helpers.js';

const RESTARTING = 'RestartingAllContainers';
const REMOVED_MESSAGE = 'The container is removed because RestartAllContainers in place';

/** Exits `code` on its first run after a few seconds (long enough to see every container run), sleeps on later runs (a marker in an emptyDir, which the restart keeps). */
function exitsOnceWith(code: number): string {
  return `if [ -f /data/ran ]; then exec sleep 3600; fi; touch /data/ran; sleep 10; exit ${code}`;
}

function pod(namespace: string, name: string, sourceScript: string, placement: Record<string, unknown> = { nodeName: NODE_NAME }): object {
  const busybox = (container: string, script: string, more: object = {}): object => ({
    name: container,
    image: 'busybox:1.35',
    command: ['sh', '-c', script],
    volumeMounts: [{ name: 'data', mountPath: '/data' }],
    ...more,
  });
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      ...placement,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      volumes: [{ name: 'data', emptyDir: {} }],
      initContainers: [busybox('init', 'exit 0')],
      containers: [
        busybox('source', sourceScript, { restartPolicy: 'Never', restartPolicyRules: [{ action: 'RestartAllContainers', exitCodes: { operator: 'In', values: [42] } }] }),
        busybox('regular', 'exec sleep 3600'),
      ],
    },
  };
}

function statusOf(p: V1Pod, name: string): V1ContainerStatus | undefined {
  return containerStatusOf(p, name) ?? containerStatusOf(p, name, true);
}

function condition(p: V1Pod, type: string): { status?: string; reason?: string } | undefined {
  const c = p.status?.conditions?.find((x) => x.type === type);
  return c === undefined ? undefined : { status: c.status, ...(c.reason === undefined ? {} : { reason: c.reason }) };
}

/** The pod once both regular containers run for the first time (the source has not exited yet). */
async function firstRun(namespace: string, name: string): Promise<V1Pod> {
  return eventually(`${name}: source and regular running`, async () => {
    const p = await getPod(namespace, name);
    const running = (c: string): boolean => statusOf(p ?? {}, c)?.state?.running !== undefined && statusOf(p ?? {}, c)?.restartCount === 0;
    return p !== undefined && running('source') && running('regular') ? p : undefined;
  });
}

const idsByName = (containers: readonly RuntimeContainer[]): Map<string, string> => new Map(containers.map((c) => [c.name, c.id]));

describe('RestartAllContainers on nodelet', () => {
  let ns = '';

  before(async () => {
    requireCluster();
    ns = await createNamespace('e2e-restart-all');
  });

  after(async () => {
    if (ns !== '') await deleteNamespace(ns);
  });

  it('the Node declares RestartAllContainersOnContainerExits (what the scheduler matches such pods against)', async () => {
    const declared = JSON.parse(await kubectl(['get', 'node', NODE_NAME, '-o', 'jsonpath={.status.declaredFeatures}']) || '[]') as string[];
    assert.ok(declared.includes('RestartAllContainersOnContainerExits'), `declaredFeatures: ${JSON.stringify(declared)}`);
  });

  it('removes every container when one exits with a listed code and runs the pod again from its init container, in the same sandbox', async () => {
    // Placed by the scheduler: its NodeDeclaredFeatures filter must let the pod onto this node.
    await apply(pod(ns, 'restart-all', exitsOnceWith(42), { nodeSelector: { 'kubernetes.io/hostname': NODE_NAME } }));
    const started = await firstRun(ns, 'restart-all');
    assert.equal(started.spec?.nodeName, NODE_NAME);
    const uid = started.metadata?.uid ?? '';
    const sandboxesBefore = await runtimeSandboxes(uid);
    assert.equal(sandboxesBefore.length, 1);
    const before = await runtimeContainers(uid);
    const oldIds = idsByName(before);
    assert.deepEqual([...oldIds.keys()].sort(), ['init', 'regular', 'source']);

    const restarted = await eventually('every container restarted once, source and regular running again', async () => {
      const p = await getPod(ns, 'restart-all');
      const again = (c: string): boolean => statusOf(p ?? {}, c)?.restartCount === 1;
      const running = (c: string): boolean => statusOf(p ?? {}, c)?.state?.running !== undefined;
      return p !== undefined && again('init') && again('source') && again('regular') && running('source') && running('regular') ? p : undefined;
    }, 120_000);

    // The API, as the kubelet reports it: one more restart each, the removal as the last state.
    assert.equal(restarted.status?.phase, 'Running');
    for (const name of ['init', 'source', 'regular']) {
      const last = statusOf(restarted, name)?.lastState?.terminated;
      assert.equal(last?.reason, RESTARTING, `${name}'s last state`);
      assert.equal(last?.exitCode, 137, `${name}'s last state`);
      assert.equal(last?.message, REMOVED_MESSAGE, `${name}'s last state`);
    }
    assert.equal(statusOf(restarted, 'init')?.state?.terminated?.exitCode, 0);
    assert.deepEqual(condition(restarted, 'AllContainersRestarting'), { status: 'False' });
    assert.equal(condition(restarted, 'Initialized')?.status, 'True');
    assert.equal(condition(restarted, 'Ready')?.status, 'True');

    // The runtime: the same sandbox, new instances (attempt 1, counted on from the logs), none of the old ones.
    const sandboxesAfter = await runtimeSandboxes(uid);
    assert.deepEqual(sandboxesAfter.map((s) => [s.id, s.attempt, s.state]), [[sandboxesBefore[0]?.id, 0, 'SANDBOX_READY']], 'the sandbox is kept');
    await expectRuntime(uid, { sandboxes: ['sandbox#0:READY'], containers: ['init#1:EXITED(0)', 'regular#1:RUNNING', 'source#1:RUNNING'] });
    const afterIds = idsByName(await runtimeContainers(uid));
    for (const [name, id] of oldIds) {
      assert.notEqual(afterIds.get(name), id, `${name} is a new container`);
      assert.ok(![...afterIds.values()].includes(id), `${name}'s old container ${id} is gone from the runtime`);
    }
    assert.equal(statusOf(restarted, 'source')?.containerID, `containerd://${afterIds.get('source') ?? ''}`);

    // The running container was stopped for it at once, with the kubelet's event.
    const killing = (await podEvents(ns, 'restart-all')).filter((e) => e.reason === 'Killing');
    assert.deepEqual(killing.map((e) => [e.involvedObject.fieldPath, e.message]), [['spec.containers{regular}', 'killing']]);

    // No second restart: the container stopped by the first (137) is gone before its exit can count.
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    const later = await getPod(ns, 'restart-all');
    assert.deepEqual(['init', 'source', 'regular'].map((c) => statusOf(later ?? {}, c)?.restartCount), [1, 1, 1]);
    assert.deepEqual(idsByName(await runtimeContainers(uid)), afterIds);
  });

  it('restarts nothing when the exit code is not one a rule lists', async () => {
    await apply(pod(ns, 'not-listed', exitsOnceWith(3)));
    const started = await firstRun(ns, 'not-listed');
    const uid = started.metadata?.uid ?? '';
    const oldIds = idsByName(await runtimeContainers(uid));
    const exited = await eventually('source terminated with 3', async () => {
      const p = await getPod(ns, 'not-listed');
      return statusOf(p ?? {}, 'source')?.state?.terminated?.exitCode === 3 ? p : undefined;
    }, 60_000);
    // Past the moment a restart would have happened.
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    const later = (await getPod(ns, 'not-listed')) ?? exited;
    assert.deepEqual(['init', 'source', 'regular'].map((c) => statusOf(later, c)?.restartCount), [0, 0, 0]);
    assert.equal(statusOf(later, 'regular')?.state?.running !== undefined, true);
    assert.equal(later.status?.phase, 'Running');
    assert.deepEqual(condition(later, 'AllContainersRestarting'), { status: 'False' });
    await expectRuntime(uid, { sandboxes: ['sandbox#0:READY'], containers: ['init#0:EXITED(0)', 'regular#0:RUNNING', 'source#0:EXITED(3)'] });
    assert.deepEqual(idsByName(await runtimeContainers(uid)), oldIds, 'the same containers');
  });
});
