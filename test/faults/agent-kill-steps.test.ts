/**
 * Fault: the agent is SIGKILLed at one exact step of starting or stopping a pod, found by a CRI
 * interposer between the agent and containerd (see `cri-interposer.ts`, `step-kill.ts`), and the
 * harness's agent is then started again by `up.sh`. Each step must converge from what the API and
 * the runtime hold, counted exactly (every sandbox and container labelled with the pod's UID, in
 * every state):
 *
 * Starting a two-container pod (`first`, `second`, started in that order):
 * - after RunPodSandbox returned: the ready sandbox is reused (as the kubelet does when the newest
 *   sandbox is ready and has its IP), never a second one; both containers start, restartCount 0.
 * - after CreateContainer of `second` returned (`first` already running, `second` created and
 *   never started): `first` is kept (same ID, restartCount 0); the created `second` is removed and
 *   replaced by one with restartCount 1 (the kubelet counts an attempt from the newest container
 *   of the name, created or not: `restartCount = latest.RestartCount + 1`).
 * - after StartContainer of `first` returned: `first` is kept (same ID, restartCount 0), `second`
 *   starts with restartCount 0.
 * - mid-StartContainer of `first` (the call cancelled as the agent dies): containerd either
 *   finished the start (`first` kept) or fails it, marking the container exited with reason
 *   `StartError`; then the next attempt runs with restartCount 1 and the dead one stays beside it
 *   (as under the kubelet, until container GC), reported by the API as the last state.
 * In every case: exactly one sandbox (the one that existed at the kill) and exactly one container
 * per spec container, running, no created leftovers, and the API's container IDs and restart
 * counts are the runtime's.
 *
 * Deleting a running pod (grace period 10 s; busybox `sleep` as PID 1 ignores SIGTERM, so the
 * runtime's StopContainer waits out the grace period):
 * - mid-StopContainer (1.5 s into the call, the runtime still working on it);
 * - after StopPodSandbox returned (containers exited, sandbox stopped, nothing removed yet and the
 *   pod object not deleted).
 * - after CreateContainer of `second` returned, the pod then deleted while no agent runs (the
 *   regression behind the kill-pod fix: a created container that never started kept the pod
 *   Terminating forever, as containerd's StopContainer does nothing to it).
 * In every case the pod object disappears from the API, and nothing labelled with its UID remains
 * in the runtime, nor its directory under the agent's root.
 *
 * Each step prints how long convergence took after the restarted agent's process started.
 */
import assert from 'node:assert/strict';
import { access } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { NODE_NAME, createNamespace, eventually, getPod, kubectl, requireCluster, uniqueName } from '../e2e/helpers.js';
import { inventoryAfterFault, podInventoryProblems } from './census.js';
import { CriInterposer, type InterposedCall } from './cri-interposer.js';
import { ensureClusterUp } from './harness.js';
import { describeStates, deleteNamespaceAndWait, runtimeOfUid, type RuntimeContainer, type RuntimeView } from './state.js';
import { killAgentAtStep, killLeftoverAgent, restoreHarnessAgent, type Restored, type StepKill } from './step-kill.js';

const CONTAINERS = ['first', 'second'] as const;
type ContainerName = (typeof CONTAINERS)[number];
const GRACE_SECONDS = 10;
const STEP_TIMEOUT_MS = 15 * 60_000;
const TRIGGER_TIMEOUT_MS = 120_000;
const CONVERGE_TIMEOUT_MS = 240_000;
const CLUSTER_DIR = process.env.CLUSTER_DIR ?? '';

function twoContainerPod(namespace: string, name: string): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { app: 'faults-steps' } },
    spec: {
      nodeName: NODE_NAME,
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: GRACE_SECONDS,
      containers: CONTAINERS.map((c) => ({ name: c, image: 'busybox:1.35', command: ['sleep', '3600'] })),
    },
  };
}

async function createPod(namespace: string, name: string): Promise<string> {
  const out = await kubectl(['create', '-f', '-', '-o', 'jsonpath={.metadata.uid}'], JSON.stringify(twoContainerPod(namespace, name)));
  if (out.trim() === '') throw new Error(`kubectl create ${name} printed no UID`);
  return out.trim();
}

function isReady(pod: V1Pod | undefined): boolean {
  return pod?.status?.phase === 'Running' && pod.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
}

/** `first: RUNNING(a1b2c3…, rc 0); second: CREATED(…)`, for messages and figures. */
function describeView(view: RuntimeView): string {
  const containers = (name: string): string =>
    view.containers
      .filter((c) => c.name === name)
      .map((c) => `${c.state.replace('CONTAINER_', '')}(${c.id.slice(0, 8)}, rc ${c.restartCount})`)
      .join(' ') || 'none';
  return `sandboxes: ${describeStates(view.sandboxes)}; ${CONTAINERS.map((n) => `${n}: ${containers(n)}`).join('; ')}`;
}

function only(view: RuntimeView, name: ContainerName): RuntimeContainer | undefined {
  const mine = view.containers.filter((c) => c.name === name);
  return mine.length === 1 ? mine[0] : undefined;
}

/** One start step: the trigger, what the kill must have left, and what each container must end as. */
interface StartStep {
  readonly step: string;
  readonly match: (call: InterposedCall, pod: string, interposer: CriInterposer) => boolean;
  /** Per container, its states at the kill. */
  readonly atKill: Readonly<Record<ContainerName, readonly string[]>>;
  /** Per container: kept (same container as at the kill) or new, and its restartCount at the end. */
  readonly end: Readonly<Record<ContainerName, { readonly kept: boolean; readonly restartCount: number }>>;
}

const START_STEPS: readonly StartStep[] = [
  {
    step: 'after RunPodSandbox',
    match: (call, pod) => call.method === 'RunPodSandbox' && call.mentions(pod),
    atKill: { first: [], second: [] },
    end: { first: { kept: false, restartCount: 0 }, second: { kept: false, restartCount: 0 } },
  },
  {
    step: 'after CreateContainer (second)',
    match: (call, pod) => call.method === 'CreateContainer' && call.mentions(pod, 'second'),
    atKill: { first: ['CONTAINER_RUNNING'], second: ['CONTAINER_CREATED'] },
    end: { first: { kept: true, restartCount: 0 }, second: { kept: false, restartCount: 1 } },
  },
  {
    step: 'after StartContainer (first)',
    match: (call, pod, interposer) => call.method === 'StartContainer' && interposer.idsCreated('CreateContainer', pod, 'first').some((id) => call.mentions(id)),
    atKill: { first: ['CONTAINER_RUNNING'], second: [] },
    end: { first: { kept: true, restartCount: 0 }, second: { kept: false, restartCount: 0 } },
  },
];

function figures(step: string, kill: StepKill, restored: Restored, convergedAtMs: number): string {
  return (
    `${step}: killed at ${kill.firing.method} (${kill.firing.phase}${kill.firing.phase === 'in-flight' ? `, runtime still working: ${kill.firing.runtimeStillWorking}` : ''}); ` +
    `at the kill ${describeView(kill.atKill)}; up.sh took ${restored.upMs} ms; ` +
    `converged ${convergedAtMs - restored.agentStartedAtMs} ms after the new agent process started (${convergedAtMs - kill.killedAtMs} ms after the kill)`
  );
}

describe('the agent SIGKILLed at each step of starting and stopping a pod', () => {
  let namespace = '';
  let interposer: CriInterposer | undefined;

  before(async () => {
    requireCluster();
    await ensureClusterUp();
    interposer = await CriInterposer.start(process.env.CONTAINER_RUNTIME_ENDPOINT ?? '');
    namespace = await createNamespace('faults-steps');
  });

  after(async () => {
    await killLeftoverAgent();
    await ensureClusterUp();
    await interposer?.close();
    if (namespace !== '') await deleteNamespaceAndWait(namespace);
  });

  for (const s of START_STEPS) {
    it(`converges to one sandbox and one running container per spec container when killed ${s.step}`, { timeout: STEP_TIMEOUT_MS }, async (t) => {
      const ip = interposer!;
      const name = uniqueName('start');
      const kill = await killAgentAtStep({
        interposer: ip,
        trigger: { phase: 'returned', match: (call) => s.match(call, name, ip) },
        act: () => createPod(namespace, name),
        timeoutMs: TRIGGER_TIMEOUT_MS,
      });
      const restored = await restoreHarnessAgent();
      assert.equal(kill.atKill.sandboxes.length, 1, `one sandbox at the kill: ${describeView(kill.atKill)}`);
      assert.equal(kill.atKill.sandboxes[0]?.state, 'SANDBOX_READY');
      for (const c of CONTAINERS) assert.deepEqual(kill.atKill.containers.filter((x) => x.name === c).map((x) => x.state), s.atKill[c], `${c} at the kill: ${describeView(kill.atKill)}`);
      const want = { sandbox: 'SANDBOX_READY' as const, containers: { first: ['CONTAINER_RUNNING'], second: ['CONTAINER_RUNNING'] } };
      const settled = async (): Promise<{ pod: V1Pod; view: RuntimeView }> => {
        const pod = await getPod(namespace, name);
        if (pod === undefined) throw new Error(`${name} is gone from the API`);
        const view = await runtimeOfUid(pod.metadata?.uid ?? '');
        const problems = [...(isReady(pod) ? [] : [`${name} is ${pod.status?.phase ?? '?'}, not Ready`]), ...podInventoryProblems(pod, view, want)];
        if (problems.length > 0) throw new Error(`${problems.join('; ')} (runtime: ${describeView(view)})`);
        return { pod, view };
      };
      const { pod, view } = await eventually(`${name} to converge`, settled, CONVERGE_TIMEOUT_MS);
      const convergedAtMs = Date.now();
      t.diagnostic(figures(s.step, kill, restored, convergedAtMs));

      assert.equal(view.sandboxes[0]?.id, kill.atKill.sandboxes[0]?.id, 'the sandbox that existed at the kill is the one the pod runs in');
      for (const c of CONTAINERS) {
        const now = only(view, c);
        const then = kill.atKill.containers.filter((x) => x.name === c);
        const status = pod.status?.containerStatuses?.find((x) => x.name === c);
        assert.equal(status?.restartCount, s.end[c].restartCount, `${c}: restartCount`);
        assert.equal(now?.restartCount, s.end[c].restartCount, `${c}: the runtime's restartCount`);
        assert.equal(now?.sandboxId, view.sandboxes[0]?.id, `${c} runs in the pod's one sandbox`);
        if (s.end[c].kept) assert.equal(now?.id, then[0]?.id, `${c}: the container running at the kill is kept`);
        else assert.ok(then.every((x) => x.id !== now?.id), `${c}: a new container (was ${then.map((x) => x.id.slice(0, 12)).join(',') || 'none'})`);
      }
      await kubectl(['delete', 'pod', '-n', namespace, name, '--wait=true', '--timeout=120s']);
    });
  }

  it('converges without a duplicate when killed mid-StartContainer: the start completed and is kept, or the runtime failed it and the next attempt runs', { timeout: STEP_TIMEOUT_MS }, async (t) => {
    // The agent dies while containerd is starting `first`; the interposer cancels the call as a
    // dying client's connection would. containerd then either finished the start, or fails it and
    // marks the container exited with reason StartError (exit code 128). Either way the pod must
    // converge to one running `first`: the same container, or the next attempt (restartCount 1)
    // with the dead one kept beside it and reported as the last state, as the kubelet does.
    const ip = interposer!;
    const name = uniqueName('midstart');
    const kill = await killAgentAtStep({
      interposer: ip,
      trigger: { phase: 'in-flight', inFlightDelayMs: 0, match: (call) => call.method === 'StartContainer' && ip.idsCreated('CreateContainer', name, 'first').some((id) => call.mentions(id)) },
      act: () => createPod(namespace, name),
      timeoutMs: TRIGGER_TIMEOUT_MS,
    });
    const restored = await restoreHarnessAgent();
    const firstThen = kill.atKill.containers.filter((c) => c.name === 'first');
    assert.equal(firstThen.length, 1, `one first at the kill: ${describeView(kill.atKill)}`);
    assert.deepEqual(kill.atKill.containers.filter((c) => c.name === 'second'), [], `second not created at the kill: ${describeView(kill.atKill)}`);
    const settled = async (): Promise<{ pod: V1Pod; view: RuntimeView }> => {
      const pod = await getPod(namespace, name);
      if (pod === undefined) throw new Error(`${name} is gone from the API`);
      const view = await runtimeOfUid(pod.metadata?.uid ?? '');
      const want = inventoryAfterFault(pod, view, { sandbox: 'SANDBOX_READY', containers: { first: ['CONTAINER_RUNNING'], second: ['CONTAINER_RUNNING'] } }, kill.atKill);
      const problems = [...(isReady(pod) ? [] : [`${name} is ${pod.status?.phase ?? '?'}, not Ready`]), ...podInventoryProblems(pod, view, want)];
      if (problems.length > 0) throw new Error(`${problems.join('; ')} (runtime: ${describeView(view)})`);
      return { pod, view };
    };
    const { pod, view } = await eventually(`${name} to converge`, settled, CONVERGE_TIMEOUT_MS);
    const convergedAtMs = Date.now();
    const was = firstThen[0]!;
    const firstNow = view.containers.filter((c) => c.name === 'first');
    const running = firstNow.find((c) => c.state === 'CONTAINER_RUNNING');
    const status = pod.status?.containerStatuses?.find((x) => x.name === 'first');
    const outcome = running?.id === was.id ? 'the start completed: kept' : firstNow.some((c) => c.id === was.id) ? 'the runtime failed the start (StartError): replaced, the dead one kept' : 'still created when the agent came back: removed and replaced';
    t.diagnostic(`${figures('mid-StartContainer (first)', kill, restored, convergedAtMs)}; first at the kill: ${was.state}${was.exitReason === '' ? '' : ` ${was.exitReason}`}; outcome: ${outcome}`);
    assert.equal(view.sandboxes[0]?.id, kill.atKill.sandboxes[0]?.id, 'the sandbox that existed at the kill is the one the pod runs in');
    if (running?.id === was.id) {
      assert.equal(status?.restartCount, 0, 'first kept: restartCount 0');
    } else {
      assert.equal(status?.restartCount, 1, 'first replaced: the next attempt has restartCount 1');
      assert.equal(running?.restartCount, 1, "first replaced: the runtime's restartCount");
      const dead = firstNow.find((c) => c.id === was.id);
      if (dead !== undefined) {
        assert.equal(dead.exitReason, 'StartError', 'a dead leftover is only a start the runtime failed');
        assert.equal(status?.lastState?.terminated?.reason, 'StartError', 'the API reports the failed start as the last state');
        assert.equal(status?.lastState?.terminated?.exitCode, 128);
      }
    }
    await kubectl(['delete', 'pod', '-n', namespace, name, '--wait=true', '--timeout=120s']);
  });

  it('removes the pod from the API and everything of it from the runtime when killed mid-StopContainer', { timeout: STEP_TIMEOUT_MS }, async (t) => {
    await deleteStep(t, 'mid-StopContainer', {
      phase: 'in-flight',
      inFlightDelayMs: 1500,
      atKill: { sandbox: 'SANDBOX_READY', containers: ['CONTAINER_RUNNING', 'CONTAINER_RUNNING'] },
      match: (call, running) => {
        const first = only(running, 'first')?.id;
        return call.method === 'StopContainer' && first !== undefined && call.mentions(first);
      },
    });
  });

  it('removes the pod from the API and everything of it from the runtime when killed after StopPodSandbox', { timeout: STEP_TIMEOUT_MS }, async (t) => {
    await deleteStep(t, 'after StopPodSandbox', {
      phase: 'returned',
      atKill: { sandbox: 'SANDBOX_NOTREADY', containers: ['CONTAINER_EXITED', 'CONTAINER_EXITED'] },
      match: (call, running) => {
        const sandbox = running.sandboxes[0]?.id;
        return call.method === 'StopPodSandbox' && sandbox !== undefined && call.mentions(sandbox);
      },
    });
  });

  it('removes the pod and its created-never-started container when it is deleted while the agent is dead after CreateContainer', { timeout: STEP_TIMEOUT_MS }, async (t) => {
    // The regression behind the kill-pod fix: containerd's StopContainer ignores a created
    // container, so the pod stayed Terminating for good.
    const ip = interposer!;
    const name = uniqueName('made');
    let uid = '';
    const kill = await killAgentAtStep({
      interposer: ip,
      trigger: { phase: 'returned', match: (call) => call.method === 'CreateContainer' && call.mentions(name, 'second') },
      act: async () => (uid = await createPod(namespace, name)),
      timeoutMs: TRIGGER_TIMEOUT_MS,
    });
    await kubectl(['delete', 'pod', '-n', namespace, name, '--wait=false']);
    const restored = await restoreHarnessAgent();
    assert.deepEqual(kill.atKill.containers.map((c) => `${c.name}:${c.state}`).sort(), ['first:CONTAINER_RUNNING', 'second:CONTAINER_CREATED'], describeView(kill.atKill));
    await expectGone(t, { step: 'after CreateContainer (second), deleted while the agent was dead', name, uid, kill, restored });
  });

  /** Waits until the pod is gone from the API, the runtime and the agent's root; prints the figures. */
  async function expectGone(t: TestContext, g: { step: string; name: string; uid: string; kill: StepKill; restored: Restored }): Promise<void> {
    await eventually(`${g.name} to be gone from the API and the runtime`, async () => {
      const [pod, view] = await Promise.all([getPod(namespace, g.name), runtimeOfUid(g.uid)]);
      if (pod !== undefined || view.sandboxes.length + view.containers.length > 0) {
        throw new Error(`API: ${pod === undefined ? 'gone' : `still there (phase ${pod.status?.phase ?? '?'})`}; runtime: ${describeView(view)}`);
      }
      return true;
    }, CONVERGE_TIMEOUT_MS);
    t.diagnostic(figures(g.step, g.kill, g.restored, Date.now()));
    const podDir = path.join(CLUSTER_DIR, 'nodelet-root', 'pods', g.uid);
    await assert.rejects(access(podDir), `${podDir} is removed`);
  }

  interface DeleteStep {
    readonly phase: 'returned' | 'in-flight';
    readonly inFlightDelayMs?: number;
    readonly atKill: { readonly sandbox: string; readonly containers: readonly string[] };
    readonly match: (call: InterposedCall, running: RuntimeView) => boolean;
  }

  async function deleteStep(t: TestContext, step: string, d: DeleteStep): Promise<void> {
    const name = uniqueName('stop');
    let running: RuntimeView = { sandboxes: [], containers: [] };
    const kill = await killAgentAtStep({
      interposer: interposer!,
      trigger: { phase: d.phase, ...(d.inFlightDelayMs === undefined ? {} : { inFlightDelayMs: d.inFlightDelayMs }), match: (call) => d.match(call, running) },
      prepare: async () => {
        const uid = await createPod(namespace, name);
        await eventually(`${name} to run under the interposed agent`, async () => (isReady(await getPod(namespace, name)) ? true : undefined), TRIGGER_TIMEOUT_MS);
        running = await runtimeOfUid(uid);
        assert.equal(running.containers.filter((c) => c.state === 'CONTAINER_RUNNING').length, 2, `both containers run before the delete: ${describeView(running)}`);
        return uid;
      },
      act: async (uid) => {
        await kubectl(['delete', 'pod', '-n', namespace, name, '--wait=false']);
        return uid ?? '';
      },
      timeoutMs: TRIGGER_TIMEOUT_MS,
    });
    const uid = running.sandboxes[0]?.uid ?? '';
    const atKillPod = await getPod(namespace, name);
    const restored = await restoreHarnessAgent();
    if (d.phase === 'in-flight') assert.equal(kill.firing.runtimeStillWorking, true, 'the runtime was still stopping the container when the agent died');
    assert.deepEqual(kill.atKill.sandboxes.map((s) => s.state), [d.atKill.sandbox], `at the kill: ${describeView(kill.atKill)}`);
    assert.deepEqual(kill.atKill.containers.map((c) => c.state), d.atKill.containers, `at the kill: ${describeView(kill.atKill)}`);
    assert.ok(atKillPod?.metadata?.deletionTimestamp !== undefined, 'the pod was still in the API, being deleted, after the kill');

    await expectGone(t, { step, name, uid, kill, restored });
  }
});
