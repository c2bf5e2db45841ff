import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ContainerState, PodSandboxState } from '../../cri/types.js';
import { planContainerGc, type ContainerGcInput, type GcContainer, type GcSandbox, type PodPresence } from './container-gc-plan.js';

const NOW = 1_000_000;

function container(id: string, o: { uid?: string; name?: string; state?: ContainerState; ageMs?: number; attempt?: number; sandbox?: string } = {}): GcContainer {
  return {
    id,
    podUid: o.uid ?? 'a',
    name: o.name ?? 'main',
    sandboxId: o.sandbox ?? 's1',
    state: o.state ?? 'CONTAINER_EXITED',
    createdAtMs: NOW - (o.ageMs ?? 10_000),
    attempt: o.attempt ?? 0,
  };
}

function sandbox(id: string, o: { uid?: string; state?: PodSandboxState; ageMs?: number; attempt?: number } = {}): GcSandbox {
  return { id, podUid: o.uid ?? 'a', state: o.state ?? 'SANDBOX_NOTREADY', createdAtMs: NOW - (o.ageMs ?? 10_000), attempt: o.attempt ?? 0 };
}

function plan(input: Partial<ContainerGcInput> & { presence?: (uid: string) => PodPresence }) {
  const result = planContainerGc({
    containers: input.containers ?? [],
    sandboxes: input.sandboxes ?? [],
    policy: input.policy ?? { minAgeMs: 0, maxPerPodContainer: 1 },
    nowMs: NOW,
    presence: input.presence ?? (() => 'present'),
  });
  return { containers: result.containers.map((r) => r.container.id).sort(), sandboxes: result.sandboxes.map((r) => r.sandbox.id).sort(), gonePods: result.gonePods, reasons: result.containers.map((r) => r.reason) };
}

// A crash-looping container: attempts 0..3 exited, attempt 4 running.
const crashLoop = [
  container('c0', { attempt: 0, ageMs: 50_000 }),
  container('c1', { attempt: 1, ageMs: 40_000 }),
  container('c2', { attempt: 2, ageMs: 30_000 }),
  container('c3', { attempt: 3, ageMs: 20_000 }),
  container('c4', { attempt: 4, ageMs: 10_000, state: 'CONTAINER_RUNNING' }),
];

describe('planContainerGc', () => {
  it('keeps the newest exited instance of a crash-looping container beside the running one, removes the rest', () => {
    const p = plan({ containers: crashLoop });
    assert.deepEqual(p.containers, ['c0', 'c1', 'c2']);
    assert.deepEqual(p.reasons, ['more than 1 exited instance of container main', 'more than 1 exited instance of container main', 'more than 1 exited instance of container main']);
  });

  it('keeps the newest exited instance when nothing runs (the next restart count is read from it)', () => {
    assert.deepEqual(plan({ containers: crashLoop.slice(0, 4) }).containers, ['c0', 'c1', 'c2']);
  });

  it('keeps maxPerPodContainer exited instances, and at least one even when the policy says 0', () => {
    assert.deepEqual(plan({ containers: crashLoop, policy: { minAgeMs: 0, maxPerPodContainer: 3 } }).containers, ['c0']);
    assert.deepEqual(plan({ containers: crashLoop.slice(0, 4), policy: { minAgeMs: 0, maxPerPodContainer: 0 } }).containers, ['c0', 'c1', 'c2']);
  });

  it('never removes running, created or unknown containers, however many', () => {
    const live = [
      container('r', { state: 'CONTAINER_RUNNING', ageMs: 90_000 }),
      container('cr', { state: 'CONTAINER_CREATED', ageMs: 80_000 }),
      container('u', { state: 'CONTAINER_UNKNOWN', ageMs: 70_000 }),
      container('e', { ageMs: 1000 }),
    ];
    assert.deepEqual(plan({ containers: live }).containers, []);
  });

  it('leaves exited containers younger than minAge alone (they count for nothing)', () => {
    const p = plan({ containers: crashLoop, policy: { minAgeMs: 35_000, maxPerPodContainer: 1 } });
    // c2 and c3 are too young; of the old enough c0 and c1, the newest (c1) stays.
    assert.deepEqual(p.containers, ['c0']);
  });

  it('orders instances created in the same millisecond by their restart count', () => {
    const same = [container('x5', { attempt: 5, ageMs: 5 }), container('x4', { attempt: 4, ageMs: 5 }), container('x6', { attempt: 6, ageMs: 5 })];
    assert.deepEqual(plan({ containers: same }).containers, ['x4', 'x5']);
  });

  it('groups by pod and container name: one exited instance per group stays', () => {
    const containers = [
      container('a-main-0', { attempt: 0, ageMs: 20_000 }),
      container('a-main-1', { attempt: 1 }),
      container('a-side-0', { name: 'side' }),
      container('b-main-0', { uid: 'b', attempt: 0, ageMs: 20_000 }),
      container('b-main-1', { uid: 'b', attempt: 1 }),
    ];
    assert.deepEqual(plan({ containers }).containers, ['a-main-0', 'b-main-0']);
  });

  it('keeps the StartError instance an interrupted start left when it is the newest exited one, and removes it once a newer one exited', () => {
    const interrupted = [container('ok-0', { attempt: 0, ageMs: 30_000 }), container('start-error-1', { attempt: 1, ageMs: 20_000 }), container('run-2', { attempt: 2, state: 'CONTAINER_RUNNING' })];
    assert.deepEqual(plan({ containers: interrupted }).containers, ['ok-0']);
    const later = [...interrupted.slice(0, 2), container('run-2', { attempt: 2, ageMs: 10_000 })];
    assert.deepEqual(plan({ containers: later }).containers, ['ok-0', 'start-error-1']);
  });

  it('keeps the newest sandbox; removes older not-ready ones without containers (counting this plan’s removals)', () => {
    const containers = [container('old', { sandbox: 's0', ageMs: 90_000 }), container('new', { sandbox: 's2' }), container('keep', { name: 'side', sandbox: 's1' })];
    const sandboxes = [sandbox('s0', { ageMs: 100_000 }), sandbox('s1', { ageMs: 50_000 }), sandbox('s2', { ageMs: 20_000, state: 'SANDBOX_READY' })];
    const p = plan({ containers, sandboxes });
    assert.deepEqual(p.containers, ['old']);
    // s0 loses its last container in this plan; s1 still holds `keep`; s2 is the newest.
    assert.deepEqual(p.sandboxes, ['s0']);
  });

  it('never removes an older sandbox that is still ready, nor the newest one when it is not ready', () => {
    const sandboxes = [sandbox('old-ready', { ageMs: 100_000, state: 'SANDBOX_READY' }), sandbox('newest', { ageMs: 1000 })];
    assert.deepEqual(plan({ sandboxes }).sandboxes, []);
  });

  it('hands pods gone from every source to the reconciler and removes nothing of them itself', () => {
    const containers = [...crashLoop, container('b0', { uid: 'b', attempt: 0, ageMs: 20_000 }), container('b1', { uid: 'b', attempt: 1 })];
    const sandboxes = [sandbox('sb-old', { uid: 'b', ageMs: 90_000 }), sandbox('sb', { uid: 'b' }), sandbox('sc', { uid: 'c' })];
    const p = plan({ containers, sandboxes, presence: (uid) => (uid === 'a' ? 'present' : 'gone') });
    assert.deepEqual(p.containers, ['c0', 'c1', 'c2']);
    assert.deepEqual(p.sandboxes, []);
    assert.deepEqual(p.gonePods, ['b', 'c']);
  });

  it('before every source has synced, an unknown pod is treated as present: its extra instances go, nothing is handed over', () => {
    const p = plan({ containers: crashLoop, presence: () => 'unknown' });
    assert.deepEqual(p.containers, ['c0', 'c1', 'c2']);
    assert.deepEqual(p.gonePods, []);
  });
});
