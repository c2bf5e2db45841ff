import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import type { PodLifecycleRecord } from './pod-lifecycle.js';
import { syncPreemptionReason, type SyncPreemptionFacts } from './sync-preemption.js';

const key = { uid: 'u1', namespace: 'ns', name: 'p' };
const syncing: PodLifecycleRecord = { key, phase: 'syncing', admittedAt: 1 };
const running: V1Pod = { metadata: { uid: 'u1', name: 'p', namespace: 'ns' } };
const deleting: V1Pod = { metadata: { ...running.metadata, deletionTimestamp: new Date(0), deletionGracePeriodSeconds: 1 } };
const facts = (over: Partial<SyncPreemptionFacts>): SyncPreemptionFacts => ({ record: syncing, desired: running, absenceTrusted: true, evicted: false, ...over });

describe('syncPreemptionReason', () => {
  it('lets the sync of a pod that is to run finish', () => {
    assert.equal(syncPreemptionReason(facts({})), undefined);
    assert.equal(syncPreemptionReason(facts({ record: undefined })), undefined);
  });

  it('stops the sync of a pod being deleted, admitted or not yet', () => {
    assert.equal(syncPreemptionReason(facts({ desired: deleting })), 'the pod is being deleted');
    assert.equal(syncPreemptionReason(facts({ record: undefined, desired: deleting })), 'the pod is being deleted');
  });

  it('stops the sync of a pod gone from every source, only when its absence can be trusted', () => {
    assert.equal(syncPreemptionReason(facts({ desired: undefined })), 'the pod is gone from every pod source');
    assert.equal(syncPreemptionReason(facts({ desired: undefined, absenceTrusted: false })), undefined);
  });

  it('stops the sync of a pod the node evicts', () => {
    assert.equal(syncPreemptionReason(facts({ evicted: true })), 'the node evicts the pod');
  });

  it('never preempts a pod already terminating or terminated: its stop shortens itself', () => {
    for (const phase of ['terminating', 'terminated'] as const) {
      const record: PodLifecycleRecord = { ...syncing, phase, terminatingAt: 2, gracePeriodSeconds: 30 };
      assert.equal(syncPreemptionReason(facts({ record, desired: deleting })), undefined);
      assert.equal(syncPreemptionReason(facts({ record, desired: undefined })), undefined);
    }
  });
});
