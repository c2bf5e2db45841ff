import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ContainerState, PodSandboxState } from '../../cri/types.js';
import { planContainerGc, type ContainerGcInput, type ContainerGcPolicy, type GcContainer, type GcSandbox, type PodPresence } from './container-gc-plan.js';

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

function plan(input: Partial<Omit<ContainerGcInput, 'policy'>> & { policy?: Partial<ContainerGcPolicy>; presence?: (uid: string) => PodPresence }) {
  const result = planContainerGc({
    containers: input.containers ?? [],
    sandboxes: input.sandboxes ?? [],
    policy: { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1, ...input.policy },
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
    assert.deepEqual(plan({ containers: crashLoop, policy: { maxPerPodContainer: 3 } }).containers, ['c0']);
    assert.deepEqual(plan({ containers: crashLoop.slice(0, 4), policy: { maxPerPodContainer: 0 } }).containers, ['c0', 'c1', 'c2']);
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
    const p = plan({ containers: crashLoop, policy: { minAgeMs: 35_000 } });
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

/** Exited instances of container `c<n>` of pod `p<n>`, created `ages` ms ago (ids `p<n>-<i>`, newest first as given). */
function unit(n: number, ages: readonly number[]): GcContainer[] {
  return ages.map((ageMs, i) => container(`p${n}-${i}`, { uid: `p${n}`, name: `c${n}`, ageMs, attempt: ages.length - 1 - i }));
}

describe('planContainerGc: the node-wide limit (maxContainers, the kubelet’s --maximum-dead-containers)', () => {
  const ids = (containers: readonly GcContainer[]): string[] => containers.map((c) => c.id).sort();

  it('-1 sets no limit', () => {
    const containers = [0, 1, 2, 3, 4].flatMap((n) => unit(n, [1000, 2000]));
    assert.deepEqual(plan({ containers, policy: { maxPerPodContainer: 2, maxContainers: -1 } }).containers, []);
  });

  it('with one pod container, keeps its newest maxContainers (the kubelet: “max containers should be complied when no max per pod container limit is set”)', () => {
    const containers = unit(0, [1000, 2000, 3000, 4000, 5000]);
    const p = plan({ containers, policy: { maxPerPodContainer: 100, maxContainers: 4 } });
    assert.deepEqual(p.containers, ['p0-4']);
    assert.deepEqual(p.reasons, ['more than 4 exited containers on the node: 4 kept per pod container']);
  });

  it('applies after the per-pod limit: nothing more goes when the per-pod limit already brings the node under it', () => {
    // The kubelet’s “max container count should apply per (UID, container) pair”: 3 × 3 instances, 2 per pod container, 6 on the node.
    const containers = [0, 1, 2].flatMap((n) => unit(n, [1000, 2000, 3000]));
    const p = plan({ containers, policy: { maxPerPodContainer: 2, maxContainers: 6 } });
    assert.deepEqual(p.containers, ['p0-2', 'p1-2', 'p2-2']);
    assert.deepEqual(p.reasons, ['c0', 'c1', 'c2'].map((name) => `more than 2 exited instances of container ${name}`));
  });

  it('over the limit, keeps an equal share of each pod container, oldest going first (the kubelet: “max limit should apply and try to keep from every pod”)', () => {
    const containers = [0, 1, 2, 3, 4].flatMap((n) => unit(n, [1000, 2000]));
    const p = plan({ containers, policy: { maxPerPodContainer: 2, maxContainers: 6 } });
    // floor(6 / 5) = 1 each.
    assert.deepEqual(p.containers, ['p0-1', 'p1-1', 'p2-1', 'p3-1', 'p4-1']);
    const shares = [0, 1].flatMap((n) => unit(n, [1000, 2000, 3000, 4000]));
    // floor(5 / 2) = 2 each: 4 left, under the limit.
    assert.deepEqual(plan({ containers: shares, policy: { maxPerPodContainer: 10, maxContainers: 5 } }).containers, ['p0-2', 'p0-3', 'p1-2', 'p1-3']);
  });

  it('keeps the newest instance of every pod container even when they outnumber the limit, where the kubelet removes the oldest ones', () => {
    // The kubelet’s “oldest pods should be removed if limit exceeded”: 8 pod containers, 10 instances, limit 6. The kubelet keeps
    // one of each (8), then removes the two oldest of those (p3-0, p5-0); nodelet keeps them: restart counts are read from them.
    const containers = [...unit(0, [1000, 2000]), ...unit(1, [1000, 2000]), ...unit(2, [2000]), ...unit(3, [3000]), ...unit(4, [2000]), ...unit(5, [3000]), ...unit(6, [1000]), ...unit(7, [2000])];
    const p = plan({ containers, policy: { maxPerPodContainer: 2, maxContainers: 6 } });
    assert.deepEqual(p.containers, ['p0-1', 'p1-1']);
    // A limit of 0 removes every dead container on the kubelet; here the newest of each stays.
    assert.deepEqual(plan({ containers: unit(0, [1000]), policy: { maxContainers: 0 } }).containers, []);
    assert.deepEqual(plan({ containers: unit(0, [1000, 2000]), policy: { maxPerPodContainer: 5, maxContainers: 0 } }).containers, ['p0-1']);
  });

  it('counts only candidates: not running, created or unknown containers, not ones younger than minAge, not those of pods gone from every source', () => {
    const containers = [
      ...unit(0, [1000, 2000, 3000]),
      container('running', { uid: 'p1', name: 'c1', state: 'CONTAINER_RUNNING' }),
      container('created', { uid: 'p2', name: 'c2', state: 'CONTAINER_CREATED' }),
      container('young', { uid: 'p3', name: 'c3', ageMs: 10 }),
      ...unit(9, [1000, 2000]).map((c) => ({ ...c, podUid: 'gone' })),
    ];
    const p = plan({ containers, policy: { minAgeMs: 100, maxPerPodContainer: 5, maxContainers: 3 }, presence: (uid) => (uid === 'gone' ? 'gone' : 'present') });
    assert.deepEqual(p.containers, []);
    assert.deepEqual(p.gonePods, ['gone']);
    // Before every source has synced, a pod not (yet) known counts: it may well be live.
    const unknown = plan({ containers: [...unit(0, [1000, 2000]), ...unit(1, [1000, 2000])], policy: { maxPerPodContainer: 5, maxContainers: 2 }, presence: (uid) => (uid === 'p1' ? 'unknown' : 'present') });
    assert.deepEqual(unknown.containers, ['p0-1', 'p1-1']);
  });

  it('removes oldest first, the per-pod removals before the node-wide ones', () => {
    const containers = unit(0, [1000, 2000, 3000, 4000]);
    const result = planContainerGc({ containers, sandboxes: [], policy: { minAgeMs: 0, maxPerPodContainer: 3, maxContainers: 1 }, nowMs: NOW, presence: () => 'present' });
    assert.deepEqual(ids(result.containers.map((r) => r.container)), ['p0-1', 'p0-2', 'p0-3']);
    assert.deepEqual(result.containers.map((r) => r.container.id), ['p0-3', 'p0-2', 'p0-1']);
  });
});
