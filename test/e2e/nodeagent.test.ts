/**
 * End to end: the node's NodeAgent custom resource on the test cluster, as a user sees it with
 * kubectl: the agent created it and reports itself Ready with the node's pod and queue counts,
 * the API server refuses invalid settings with the schema's message, and `spec.paused` changes
 * what the agent does without a restart.
 *
 * Pausing holds new pods on the whole node, so the pause test keeps its window short and always
 * unpauses, even when it fails.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { V1Pod } from '@kubernetes/client-node';
import {
  NODE_NAME,
  apply,
  busyboxPod,
  createNamespace,
  deleteNamespace,
  eventually,
  getPod,
  kubectl,
  podEvents,
  requireCluster,
  sandboxesOf,
  waitForPhase,
} from './helpers.js';

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  observedGeneration?: number;
}

interface NodeAgentObject {
  metadata: { name: string; generation: number };
  spec?: Record<string, unknown>;
  status?: {
    observedGeneration?: number;
    nodeName?: string;
    conditions?: Condition[];
    pods?: number;
    queue?: { waiting: number; active: number; delayed: number; failed: number; depth: number };
    runtimeVersion?: string;
    agentVersion?: string;
    lastRelistTime?: string;
  };
}

async function getNodeAgent(): Promise<NodeAgentObject> {
  return JSON.parse(await kubectl(['get', 'nodeagent', NODE_NAME, '-o', 'json'])) as NodeAgentObject;
}

function conditionOf(agent: NodeAgentObject, type: string): Condition | undefined {
  return agent.status?.conditions?.find((c) => c.type === type);
}

/** Merge-patches the spec; `null` removes a field. */
async function patchSpec(spec: Record<string, unknown>): Promise<void> {
  await kubectl(['patch', 'nodeagent', NODE_NAME, '--type', 'merge', '-p', JSON.stringify({ spec })]);
}

/** Waits until the agent reports the current generation applied, and returns the object. */
async function waitApplied(what: string, check: (agent: NodeAgentObject) => boolean = () => true): Promise<NodeAgentObject> {
  return eventually(what, async () => {
    const agent = await getNodeAgent();
    return agent.status?.observedGeneration === agent.metadata.generation && check(agent) ? agent : undefined;
  });
}

/** kubectl's stderr of a command that must fail. */
async function refused(args: readonly string[], input?: string): Promise<string> {
  try {
    await kubectl(args, input);
  } catch (error) {
    return typeof error === 'object' && error !== null && 'stderr' in error ? String(error.stderr) : String(error);
  }
  assert.fail(`kubectl ${args.join(' ')} succeeded`);
}

function isActive(pod: V1Pod): boolean {
  return pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed';
}

describe('the NodeAgent of the nodelet node', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-na');
    await patchSpec({ paused: null });
  });

  after(async () => {
    await patchSpec({ paused: null, gc: null, logRotation: null, maxPods: null }).catch(() => undefined);
    await kubectl(['delete', 'nodeagent', `${NODE_NAME}-e2e-invalid`, '--ignore-not-found']).catch(() => undefined);
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('was created by the agent and shows the node Ready in kubectl get nodeagents', async () => {
    const agent = await waitApplied('the NodeAgent to report Ready', (a) => conditionOf(a, 'Ready')?.status === 'True');
    assert.equal(agent.status?.nodeName, NODE_NAME);
    assert.match(agent.status?.runtimeVersion ?? '', /^containerd:\/\//);
    assert.match(agent.status?.agentVersion ?? '', /^v\d+\.\d+\.\d+-nodelet$/);
    assert.ok(Date.now() - Date.parse(agent.status?.lastRelistTime ?? '') < 60_000, 'the runtime was relisted within a minute');
    for (const type of ['RuntimeReady', 'QueueReady', 'APIReady', 'SettingsApplied']) assert.equal(conditionOf(agent, type)?.status, 'True', type);
    const table = await kubectl(['get', 'nodeagents']);
    const [header = '', ...rows] = table.trim().split('\n');
    assert.deepEqual(header.split(/\s+/), ['NAME', 'NODE', 'READY', 'PODS', 'QUEUE', 'RUNTIME', 'AGE']);
    const row = rows.map((r) => r.split(/\s+/)).find((cells) => cells[0] === NODE_NAME);
    assert.equal(row?.[1], NODE_NAME);
    assert.equal(row?.[2], 'True');
    assert.match(row?.[5] ?? '', /^containerd:\/\//);
    assert.match((await kubectl(['get', 'na', NODE_NAME, '-o', 'name'])).trim(), /^nodeagent\.nodelet\.dev\//);
  });

  it('counts the pods the node runs and the jobs of its queue as the API and Redis see them', async () => {
    for (const name of ['count-a', 'count-b']) await apply(busyboxPod({ name, namespace, nodeName: NODE_NAME, script: 'sleep 3600' }));
    await waitForPhase(namespace, 'count-a', 'Running');
    await waitForPhase(namespace, 'count-b', 'Running');
    const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:16379', { maxRetriesPerRequest: 3 });
    const queue = new Queue(`nodelet-reconcile-${NODE_NAME}`, { connection: redis, prefix: 'nodelet' });
    try {
      // Other tests may run pods on the node at the same time: compare until a quiet moment.
      await eventually('NodeAgent pods and queue counts to match the API and Redis', async () => {
        const pods = JSON.parse(await kubectl(['get', 'pods', '-A', '--field-selector', `spec.nodeName=${NODE_NAME}`, '-o', 'json'])) as { items: V1Pod[] };
        const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'failed');
        const status = (await getNodeAgent()).status;
        const podsMatch = status?.pods === pods.items.filter(isActive).length && (status.pods ?? 0) >= 2;
        const q = status?.queue;
        if (q === undefined) return undefined;
        const queueMatches = q.failed === counts.failed && q.delayed === counts.delayed && q.depth === (counts.waiting ?? 0) + (counts.active ?? 0) && q.depth === q.waiting + q.active;
        return podsMatch && queueMatches ? true : undefined;
      });
    } finally {
      await queue.close();
      redis.disconnect();
    }
    const table = await kubectl(['get', 'nodeagent', NODE_NAME, '--no-headers']);
    assert.match(table, new RegExp(`^${NODE_NAME}\\s+${NODE_NAME}\\s+True\\s+\\d+\\s+\\d+\\s+containerd://`));
  });

  it('refuses invalid settings with the schema\'s message and keeps the spec as it was', async () => {
    const before = await getNodeAgent();
    const range = await refused(['patch', 'nodeagent', NODE_NAME, '--type', 'merge', '-p', '{"spec":{"workerConcurrency":0}}']);
    assert.match(range, /spec\.workerConcurrency in body should be greater than or equal to 1/);
    const level = await refused(['patch', 'nodeagent', NODE_NAME, '--type', 'merge', '-p', '{"spec":{"logLevel":"loud"}}']);
    assert.match(level, /spec\.logLevel: Unsupported value: "loud"/);
    const manifest = { apiVersion: 'nodelet.dev/v1alpha1', kind: 'NodeAgent', metadata: { name: `${NODE_NAME}-e2e-invalid` }, spec: { gc: { imageHighThresholdPercent: 70, imageLowThresholdPercent: 75 } } };
    const cel = await refused(['apply', '-f', '-'], JSON.stringify(manifest));
    assert.match(cel, /gc\.imageLowThresholdPercent must be lower than gc\.imageHighThresholdPercent/);
    const size = await refused(['patch', 'nodeagent', NODE_NAME, '--type', 'merge', '-p', '{"spec":{"logRotation":{"containerLogMaxSize":"10MB"}}}']);
    assert.match(size, /spec\.logRotation\.containerLogMaxSize in body should match/);
    const after = await getNodeAgent();
    assert.equal(after.metadata.generation, before.metadata.generation);
  });

  it('applies GC and log-rotation settings live (SettingsApplied=True)', async () => {
    await patchSpec({ gc: { maxDeadContainersPerPod: 3 } });
    const applied = await waitApplied('SettingsApplied=True with spec.gc set', (a) => a.metadata.generation === a.status?.observedGeneration && conditionOf(a, 'SettingsApplied')?.status === 'True');
    assert.equal(conditionOf(applied, 'SettingsApplied')?.reason, 'Applied');
    await patchSpec({ gc: null, logRotation: { containerLogMaxFiles: 3 } });
    const agent = await waitApplied('SettingsApplied=True with spec.logRotation set', (a) => conditionOf(a, 'SettingsApplied')?.status === 'True');
    assert.equal(conditionOf(agent, 'SettingsApplied')?.reason, 'Applied');
    assert.equal(conditionOf(agent, 'Ready')?.status, 'True');
    await patchSpec({ logRotation: null });
    await waitApplied('SettingsApplied=True again', (a) => conditionOf(a, 'SettingsApplied')?.status === 'True');
  });

  it('advertises a new maxPods in the Node capacity live', async () => {
    await patchSpec({ maxPods: 42 });
    await eventually('node capacity pods=42', async () => {
      const node = JSON.parse(await kubectl(['get', 'node', NODE_NAME, '-o', 'json'])) as { status: { capacity: Record<string, string>; allocatable: Record<string, string> } };
      return node.status.capacity.pods === '42' && node.status.allocatable.pods === '42' ? true : undefined;
    });
    await patchSpec({ maxPods: null });
    await eventually('node capacity pods back to the flag value', async () => {
      const node = JSON.parse(await kubectl(['get', 'node', NODE_NAME, '-o', 'json'])) as { status: { capacity: Record<string, string> } };
      return node.status.capacity.pods === '110' ? true : undefined;
    });
  });

  it('pauses live: a new pod stays Pending in ContainerCreating with NodeletPaused while a running pod keeps running; unpausing starts it', async () => {
    await apply(busyboxPod({ name: 'keeps-running', namespace, nodeName: NODE_NAME, script: 'sleep 3600' }));
    const running = await waitForPhase(namespace, 'keeps-running', 'Running');
    const runningContainer = running.status?.containerStatuses?.[0]?.containerID;
    try {
      await kubectl(['patch', 'nodeagent', NODE_NAME, '--type', 'merge', '-p', '{"spec":{"paused":true}}']);
      await waitApplied('the agent to apply paused', (a) => (conditionOf(a, 'Ready')?.message ?? '').includes('paused'));
      await apply(busyboxPod({ name: 'held', namespace, nodeName: NODE_NAME, script: 'sleep 3600' }));
      await eventually('a NodeletPaused event on the held pod', async () => ((await podEvents(namespace, 'held')).some((e) => e.reason === 'NodeletPaused') ? true : undefined));
      const held = await eventually('the held pod to report ContainerCreating', async () => {
        const pod = await getPod(namespace, 'held');
        return pod?.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ContainerCreating' ? pod : undefined;
      });
      assert.equal(held.status?.phase, 'Pending');
      assert.deepEqual(await sandboxesOf(held.metadata?.uid ?? ''), [], 'no sandbox was created');
      // Still held a few seconds (and several PLEG relists) later; the running pod is untouched.
      await new Promise((resolve) => setTimeout(resolve, 4000));
      assert.equal((await getPod(namespace, 'held'))?.status?.phase, 'Pending');
      const stillRunning = await getPod(namespace, 'keeps-running');
      assert.equal(stillRunning?.status?.phase, 'Running');
      assert.equal(stillRunning?.status?.containerStatuses?.[0]?.containerID, runningContainer);
      assert.equal(stillRunning?.status?.containerStatuses?.[0]?.restartCount, 0);
    } finally {
      await kubectl(['patch', 'nodeagent', NODE_NAME, '--type', 'merge', '-p', '{"spec":{"paused":false}}']);
    }
    const started = await waitForPhase(namespace, 'held', 'Running', 30_000);
    assert.equal(started.status?.containerStatuses?.[0]?.ready, true);
  });
});
