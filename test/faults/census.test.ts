/**
 * The fault suite's counting (no cluster needed): what `census.ts` calls a problem. Each case is a
 * state a broken agent could leave, and the check must name it; the good states must pass.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { ONE_RUNNING_MAIN, SandboxWitness, countDamage, inventoryAfterFault, ledgerOf, orphanProblems, podInventoryProblems } from './census.js';
import type { RuntimeContainer, RuntimeSandbox, RuntimeView } from './state.js';

function sandbox(uid: string, state = 'SANDBOX_READY', id = `sb-${uid}`): RuntimeSandbox {
  return { id, uid, state, attempt: 0 };
}

function container(uid: string, attempt: number, state = 'CONTAINER_RUNNING', id = `c-${uid}-${attempt}`): RuntimeContainer {
  return { id, uid, name: 'main', state, sandboxId: `sb-${uid}`, attempt, restartCount: attempt, exitReason: state === 'CONTAINER_EXITED' ? 'Error' : '' };
}

/** `main`'s first attempt, exited as containerd marks a start whose caller died. */
const startFailed = (uid: string): RuntimeContainer => ({ ...container(uid, 0, 'CONTAINER_EXITED'), exitReason: 'StartError' });

/** `pod()` whose status also reports the previous attempt's termination reason. */
function podWithLastState(uid: string, id: string, restartCount: number, reason: string): V1Pod {
  const p = pod(uid, id, restartCount);
  const status = p.status!.containerStatuses![0]!;
  status.lastState = { terminated: { exitCode: 128, reason } };
  return p;
}

/** A pod whose API status reports `main` as the container `id` with `restartCount`. */
function pod(uid: string, id = `c-${uid}-0`, restartCount = 0): V1Pod {
  return {
    metadata: { name: `pod-${uid}`, uid },
    spec: { containers: [{ name: 'main', image: 'busybox' }] },
    status: { phase: 'Running', containerStatuses: [{ name: 'main', containerID: `containerd://${id}`, restartCount, ready: true, image: 'busybox', imageID: '' }] },
  };
}

const view = (sandboxes: RuntimeSandbox[], containers: RuntimeContainer[]): RuntimeView => ({ sandboxes, containers });

describe('podInventoryProblems', () => {
  it('passes one ready sandbox and one running container that the API reports', () => {
    assert.deepEqual(podInventoryProblems(pod('a'), view([sandbox('a')], [container('a', 0)]), ONE_RUNNING_MAIN), []);
  });

  it('names a second sandbox even when it is not ready', () => {
    const problems = podInventoryProblems(pod('a'), view([sandbox('a'), sandbox('a', 'SANDBOX_NOTREADY', 'old')], [container('a', 0)]), ONE_RUNNING_MAIN);
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /2 sandboxes/);
  });

  it('names a created-but-never-started leftover beside the running container', () => {
    const problems = podInventoryProblems(pod('a', 'c-a-1', 1), view([sandbox('a')], [container('a', 0, 'CONTAINER_CREATED'), container('a', 1)]), ONE_RUNNING_MAIN);
    assert.match(problems.join(), /CONTAINER_CREATED → CONTAINER_RUNNING/);
  });

  it('names an exited duplicate: two instances where one was expected', () => {
    const problems = podInventoryProblems(pod('a', 'c-a-1', 1), view([sandbox('a')], [container('a', 0, 'CONTAINER_EXITED'), container('a', 1)]), ONE_RUNNING_MAIN);
    assert.equal(problems.length, 1);
  });

  it("names an API status that is not the runtime's newest container, or another restart count", () => {
    assert.match(podInventoryProblems(pod('a', 'stale'), view([sandbox('a')], [container('a', 0)]), ONE_RUNNING_MAIN).join(), /API reports container stale/);
    assert.match(podInventoryProblems(pod('a', 'c-a-0', 2), view([sandbox('a')], [container('a', 0)]), ONE_RUNNING_MAIN).join(), /restartCount 2/);
  });

  it('names a container whose restart-count annotation is not its attempt', () => {
    const odd = { ...container('a', 0), restartCount: 3 };
    assert.match(podInventoryProblems(pod('a'), view([sandbox('a')], [odd]), ONE_RUNNING_MAIN).join(), /annotation 3/);
  });
});

describe('orphanProblems', () => {
  it("names every sandbox and container of a UID the API does not have, in any state", () => {
    const runtime = view([sandbox('a'), sandbox('gone', 'SANDBOX_NOTREADY')], [container('a', 0), container('gone', 0, 'CONTAINER_EXITED')]);
    const problems = orphanProblems([pod('a')], runtime, ['gone']);
    assert.equal(problems.length, 2);
    assert.ok(problems.every((p) => p.startsWith('deleted pod gone')));
    assert.deepEqual(orphanProblems([pod('a'), pod('gone')], runtime), []);
  });
});

describe('ledgerOf', () => {
  const now = (pods: V1Pod[], containers: RuntimeContainer[]): { pods: V1Pod[]; runtime: RuntimeView } => ({ pods, runtime: view(pods.map((p) => sandbox(p.metadata!.uid!)), containers) });

  it('passes a running container kept, a created one started or (after an agent kill) replaced, and a new one at restartCount 0', () => {
    const atFault = view([], [container('run', 0), container('made', 0, 'CONTAINER_CREATED'), container('left', 0, 'CONTAINER_CREATED')]);
    const ledger = ledgerOf(
      now([pod('run'), pod('made'), pod('left', 'c-left-1', 1), pod('new')], [container('run', 0), container('made', 0), container('left', 1), container('new', 0)]),
      atFault,
      true,
    );
    assert.deepEqual(ledger.problems, []);
    assert.deepEqual(ledger.summary, { runningAtFault: 1, keptRunning: 1, createdAtFault: 2, createdStarted: 1, createdReplaced: 1, createdStartFailed: 0, newSinceFault: 1 });
  });

  it('names a running container that was replaced or restarted', () => {
    const atFault = view([], [container('run', 0)]);
    const ledger = ledgerOf(now([pod('run', 'c-run-1', 1)], [container('run', 0, 'CONTAINER_EXITED'), container('run', 1)]), atFault, true);
    assert.match(ledger.problems.join(), /running container c-run-0 .* was replaced or restarted/);
  });

  it('names a created container replaced while the agent lived, or replaced but still there', () => {
    const atFault = view([], [container('made', 0, 'CONTAINER_CREATED')]);
    assert.equal(ledgerOf(now([pod('made', 'c-made-1', 1)], [container('made', 1)]), atFault, false).problems.length, 1);
    assert.equal(ledgerOf(now([pod('made', 'c-made-1', 1)], [container('made', 0, 'CONTAINER_CREATED'), container('made', 1)]), atFault, true).problems.length, 1);
  });

  it('names a container that did not exist at the fault but starts with a restart count', () => {
    assert.equal(ledgerOf(now([pod('new', 'c-new-1', 1)], [container('new', 1)]), view([], []), true).problems.length, 1);
  });

  it('passes a created container whose start the runtime failed when the agent died (StartError, kept dead) and was replaced', () => {
    const atFault = view([], [container('made', 0, 'CONTAINER_CREATED')]);
    const ledger = ledgerOf(now([podWithLastState('made', 'c-made-1', 1, 'StartError')], [startFailed('made'), container('made', 1)]), atFault, true);
    assert.deepEqual(ledger.problems, []);
    assert.equal(ledger.summary.createdStartFailed, 1);
  });

  it('names a dead leftover that did not fail to start, one the API does not report as the last state, or one left while the agent lived', () => {
    const atFault = view([], [container('made', 0, 'CONTAINER_CREATED')]);
    const exitedOtherwise = container('made', 0, 'CONTAINER_EXITED');
    assert.equal(ledgerOf(now([podWithLastState('made', 'c-made-1', 1, 'Error')], [exitedOtherwise, container('made', 1)]), atFault, true).problems.length, 1);
    assert.equal(ledgerOf(now([podWithLastState('made', 'c-made-1', 1, 'Error')], [startFailed('made'), container('made', 1)]), atFault, true).problems.length, 1);
    assert.equal(ledgerOf(now([podWithLastState('made', 'c-made-1', 1, 'StartError')], [startFailed('made'), container('made', 1)]), atFault, false).problems.length, 1);
  });
});

describe('inventoryAfterFault', () => {
  const running = (uid: string, attempt: number): RuntimeContainer => container(uid, attempt);

  it('expects a dead instance before the running one only for a start the fault interrupted', () => {
    const atFault = view([], [container('made', 0, 'CONTAINER_CREATED')]);
    const runtime = view([sandbox('made')], [startFailed('made'), running('made', 1)]);
    const want = inventoryAfterFault(pod('made', 'c-made-1', 1), runtime, ONE_RUNNING_MAIN, atFault);
    assert.deepEqual(want.containers, { main: ['CONTAINER_EXITED', 'CONTAINER_RUNNING'] });
    assert.deepEqual(podInventoryProblems(pod('made', 'c-made-1', 1), runtime, want), []);
  });

  it('keeps one running container as the want for an exit that was not a start error, or a container that was running at the fault', () => {
    const exited = view([sandbox('x')], [container('x', 0, 'CONTAINER_EXITED'), running('x', 1)]);
    assert.deepEqual(inventoryAfterFault(pod('x'), exited, ONE_RUNNING_MAIN, view([], [container('x', 0, 'CONTAINER_CREATED')])).containers, { main: ['CONTAINER_RUNNING'] });
    const wasRunning = view([sandbox('x')], [startFailed('x'), running('x', 1)]);
    assert.deepEqual(inventoryAfterFault(pod('x'), wasRunning, ONE_RUNNING_MAIN, view([], [container('x', 0)])).containers, { main: ['CONTAINER_RUNNING'] });
  });
});

describe('countDamage', () => {
  it('counts nothing on a clean node: one sandbox per pod, containers of known pods only', () => {
    const runtime = view([sandbox('a'), sandbox('b')], [container('a', 0), container('b', 0)]);
    assert.deepEqual(countDamage([pod('a'), pod('b')], runtime), { duplicateSandboxes: 0, orphanSandboxes: 0, orphanContainers: 0 });
  });

  it('counts a planted duplicate sandbox of a known pod in any state, and every one beyond the first', () => {
    const runtime = view([sandbox('a'), sandbox('a', 'SANDBOX_NOTREADY', 'dup1'), sandbox('a', 'SANDBOX_READY', 'dup2'), sandbox('b')], [container('a', 0)]);
    assert.deepEqual(countDamage([pod('a'), pod('b')], runtime), { duplicateSandboxes: 2, orphanSandboxes: 0, orphanContainers: 0 });
  });

  it('counts planted orphans (a UID the API does not have) apart from duplicates, in any state', () => {
    const runtime = view([sandbox('a'), sandbox('gone', 'SANDBOX_NOTREADY'), sandbox('gone', 'SANDBOX_READY', 'gone2')], [container('a', 0), container('gone', 0, 'CONTAINER_EXITED')]);
    assert.deepEqual(countDamage([pod('a')], runtime), { duplicateSandboxes: 0, orphanSandboxes: 2, orphanContainers: 1 });
  });
});

describe('SandboxWitness', () => {
  const attempt = (s: RuntimeSandbox, n: number): RuntimeSandbox => ({ ...s, attempt: n });

  it('counts a second sandbox of a pod seen in another reading, even once the first is gone', () => {
    const witness = new SandboxWitness();
    witness.observe(view([sandbox('a'), sandbox('b')], []));
    witness.observe(view([attempt(sandbox('a', 'SANDBOX_READY', 'replacement'), 1), sandbox('b')], []));
    assert.equal(witness.duplicateCount, 1);
    assert.deepEqual(witness.duplicates(), [{ uid: 'a', sandboxIds: ['sb-a', 'replacement'] }]);
    assert.equal(witness.observations, 2);
    assert.equal(witness.pods, 2);
  });

  it('counts nothing for the same sandbox seen again and again, in changing states', () => {
    const witness = new SandboxWitness();
    witness.observe(view([sandbox('a')], []));
    witness.observe(view([sandbox('a', 'SANDBOX_NOTREADY')], []));
    witness.observe(view([], []));
    assert.equal(witness.duplicateCount, 0);
    assert.deepEqual(witness.duplicates(), []);
  });

  it('tells apart an older sandbox never ready and never with a container (the runtime died making it), replaced by a later attempt', () => {
    const witness = new SandboxWitness();
    witness.observe(view([sandbox('a', 'SANDBOX_NOTREADY', 'half-made')], []));
    witness.observe(view([sandbox('a', 'SANDBOX_NOTREADY', 'half-made'), attempt(sandbox('a', 'SANDBOX_READY', 'new'), 1)], [{ ...container('a', 0), sandboxId: 'new' }]));
    assert.deepEqual(witness.abandonedAtCreation(), [{ uid: 'a', sandboxId: 'half-made' }]);
    assert.deepEqual(witness.duplicates(), []);
    assert.equal(witness.duplicateCount, 0);
  });

  it('still counts a replaced sandbox that had been ready, or had a container, or two sandboxes of one attempt', () => {
    const wasReady = new SandboxWitness();
    wasReady.observe(view([sandbox('a', 'SANDBOX_READY', 'first')], []));
    wasReady.observe(view([sandbox('a', 'SANDBOX_NOTREADY', 'first'), attempt(sandbox('a', 'SANDBOX_READY', 'second'), 1)], []));
    assert.equal(wasReady.duplicateCount, 1);
    const hadContainer = new SandboxWitness();
    hadContainer.observe(view([sandbox('a', 'SANDBOX_NOTREADY', 'first'), attempt(sandbox('a', 'SANDBOX_READY', 'second'), 1)], [{ ...container('a', 0, 'CONTAINER_EXITED'), sandboxId: 'first' }]));
    assert.equal(hadContainer.duplicateCount, 1);
    const sameAttempt = new SandboxWitness();
    sameAttempt.observe(view([sandbox('a', 'SANDBOX_NOTREADY', 'first'), sandbox('a', 'SANDBOX_READY', 'second')], []));
    assert.equal(sameAttempt.duplicateCount, 1);
    assert.deepEqual(sameAttempt.abandonedAtCreation(), []);
  });
});
