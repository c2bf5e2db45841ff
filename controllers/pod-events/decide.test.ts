import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PodLifecyclePhase } from '../../reconcilers/lifecycle/pod-lifecycle.js';
import type { PodEvent } from '../../reconcilers/model/pod-event.js';
import type { PodKey } from '../../util/pod-key.js';
import { decidePodEvent, RESTART_WHY, type PodEventAction, type PodEventFacts } from './decide.js';

const key: PodKey = { uid: 'u1', namespace: 'ns', name: 'p' };

/** One event of every kind (a status-only update by another writer stands for `status-updated`). */
const EVENTS: Readonly<Record<PodEvent['kind'], PodEvent>> = {
  'source-changed': { kind: 'source-changed', key, source: 'api', change: 'updated' },
  'status-updated': { kind: 'status-updated', key, readinessGatesDisagree: false, evicted: false },
  resync: { kind: 'resync', key },
  'mirror-pod-created': { kind: 'mirror-pod-created', key },
  'runtime-changed': { kind: 'runtime-changed', key, change: 'changed' },
  'probe-result': { kind: 'probe-result', key, probe: 'liveness', result: 'failed' },
  'remains-found': { kind: 'remains-found', key },
  evicted: { kind: 'evicted', key, message: 'The node was low on resource: memory.' },
  'resize-retry': { kind: 'resize-retry', key },
};

interface Facts {
  readonly nothingLeft?: boolean;
  readonly ownEcho?: boolean;
  readonly moot?: string;
  readonly phase?: PodLifecyclePhase;
}

function facts(f: Facts): PodEventFacts {
  return { nothingLeftToSync: () => f.nothingLeft === true, isOwnStatusEcho: () => f.ownEcho === true, mootSyncReason: () => f.moot, lifecyclePhase: () => f.phase };
}

const ENQUEUE: PodEventAction = { action: 'enqueue' };
const ADDED = { kind: 'source-changed', key, source: 'api', change: 'added' } as const;
const PREEMPT: PodEventAction = { action: 'preempt-and-enqueue', why: 'the pod is being deleted' };
const MOOT = 'the pod is being deleted';

/** Every kind but the status-only update: enqueued (a resync: resynced), or preempt-and-enqueued when the event made the sync in flight moot. */
const FULL_EVENTS = Object.values(EVENTS).filter((e) => e.kind !== 'status-updated');
const RESYNC: PodEventAction = { action: 'resync' };

describe('decidePodEvent', () => {
  const cases: { name: string; event: PodEvent; facts: Facts; want: PodEventAction }[] = [
    ...FULL_EVENTS.map((event) => (event.kind === 'resync' ? { name: 'resync: resync (a pod without a job runs without one)', event, facts: {}, want: RESYNC } : { name: `${event.kind}: enqueue`, event, facts: {}, want: ENQUEUE })),
    ...FULL_EVENTS.map((event) => ({ name: `${event.kind} that makes the sync in flight moot: preempt, then enqueue`, event, facts: { moot: MOOT }, want: PREEMPT })),
    ...Object.values(EVENTS).map((event) => ({ name: `${event.kind} of a pod with nothing left to sync: drop`, event, facts: { nothingLeft: true, moot: MOOT, ownEcho: true }, want: { action: 'drop', why: 'nothing-left-to-sync' } as const })),
    { name: "another writer's status-only update: enqueue if idle", event: EVENTS['status-updated'], facts: {}, want: { action: 'enqueue-if-idle' } },
    { name: 'a status-only update never preempts, even when a sync would be moot', event: EVENTS['status-updated'], facts: { moot: MOOT }, want: { action: 'enqueue-if-idle' } },
    { name: 'the echo of nodelet\'s own newest status: drop', event: EVENTS['status-updated'], facts: { ownEcho: true }, want: { action: 'drop', why: 'own-status-echo' } },
    {
      name: 'a status-only update whose readiness gates disagree with Ready: enqueue, even when it echoes',
      event: { kind: 'status-updated', key, readinessGatesDisagree: true, evicted: false },
      facts: { ownEcho: true },
      want: ENQUEUE,
    },
    { name: 'a status-only update showing the pod evicted: enqueue', event: { kind: 'status-updated', key, readinessGatesDisagree: false, evicted: true }, facts: { ownEcho: true }, want: ENQUEUE },
    { name: 'a status-only update showing the pod evicted, its sync moot: preempt, then enqueue', event: { kind: 'status-updated', key, readinessGatesDisagree: false, evicted: true }, facts: { moot: MOOT }, want: PREEMPT },
    { name: 'a UID added that the kernel does not know (a first sighting, also after an agent restart): enqueue', event: ADDED, facts: {}, want: ENQUEUE },
    { name: 'a UID added again while it still syncs (removed and given back before any run saw it gone): restart, its sync cancelled', event: ADDED, facts: { phase: 'syncing' }, want: { action: 'request-restart', why: RESTART_WHY, preempt: true } },
    { name: 'a UID added again while it stops: restart once stopped, the stop in flight going on', event: ADDED, facts: { phase: 'terminating', moot: MOOT }, want: { action: 'request-restart', why: RESTART_WHY, preempt: false } },
    { name: 'a UID added again once terminated: restart', event: { ...ADDED, source: 'file' }, facts: { phase: 'terminated' }, want: { action: 'request-restart', why: RESTART_WHY, preempt: false } },
    { name: 'a UID added again that was removed here and whose restart is due: drop (housekeeping restarts it)', event: ADDED, facts: { phase: 'terminated', nothingLeft: true }, want: { action: 'drop', why: 'nothing-left-to-sync' } },
    ...(['updated', 'relisted', 'vanished', 'deleted'] as const).map((change) => ({ name: `a known UID ${change} (no add): no restart`, event: { ...ADDED, change }, facts: { phase: 'terminating' as const }, want: ENQUEUE })),
  ];

  for (const c of cases) {
    it(c.name, () => {
      assert.deepEqual(decidePodEvent(c.event, facts(c.facts)), c.want);
    });
  }

  it('covers every kind of event', () => {
    const kinds = new Set(cases.map((c) => c.event.kind));
    assert.deepEqual([...kinds].sort(), Object.keys(EVENTS).sort());
  });
});
