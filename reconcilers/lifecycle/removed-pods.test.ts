import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import type { PodLifecycleRecord } from './pod-lifecycle.js';
import { nothingLeftToSync, onlyForgettingLeft, restartDue } from './removed-pods.js';

const key = { uid: 'u1', namespace: 'ns', name: 'p' };
const removed: PodLifecycleRecord = { key, phase: 'terminated', terminatingAt: 1, terminatedAt: 2, removedAt: 3 };
const pod: V1Pod = { metadata: { uid: 'u1', namespace: 'ns', name: 'p' } };

describe('onlyForgettingLeft', () => {
  it('holds for a pod this process removed from the runtime that no source has, once absence is trusted', () => {
    assert.equal(onlyForgettingLeft({ record: removed, desired: undefined, absenceTrusted: true }), true);
  });

  it('does not hold while a source still has the pod, or its absence cannot be trusted yet', () => {
    assert.equal(onlyForgettingLeft({ record: removed, desired: pod, absenceTrusted: true }), false);
    assert.equal(onlyForgettingLeft({ record: removed, desired: undefined, absenceTrusted: false }), false);
  });

  it('does not hold for a pod this process did not remove (terminated, not removed; terminating; unknown after a restart)', () => {
    const { removedAt: _removedAt, ...terminated } = removed;
    assert.equal(onlyForgettingLeft({ record: terminated, desired: undefined, absenceTrusted: true }), false);
    assert.equal(onlyForgettingLeft({ record: { key, phase: 'terminating', terminatingAt: 1 }, desired: undefined, absenceTrusted: true }), false);
    assert.equal(onlyForgettingLeft({ record: undefined, desired: undefined, absenceTrusted: true }), false);
  });

  it('asks no sync of a removed pod whose object this process deleted, even while a source still has that object', () => {
    const deleted: PodLifecycleRecord = { ...removed, objectDeletedAt: 4 };
    const terminating: V1Pod = { ...pod, metadata: { ...pod.metadata, deletionTimestamp: new Date(0), deletionGracePeriodSeconds: 0 } };
    assert.equal(nothingLeftToSync({ record: deleted, desired: terminating, absenceTrusted: true }), true);
    assert.equal(onlyForgettingLeft({ record: deleted, desired: terminating, absenceTrusted: true }), false, 'not forgotten while a source has it');
    assert.equal(nothingLeftToSync({ record: deleted, desired: undefined, absenceTrusted: false }), true);
    assert.equal(nothingLeftToSync({ record: removed, desired: undefined, absenceTrusted: true }), true, 'gone: only forgetting is left');
  });

  it('asks no sync of a removed pod while its run (the one deleting its object) is in flight, and asks one after', () => {
    const terminating: V1Pod = { ...pod, metadata: { ...pod.metadata, deletionTimestamp: new Date(0), deletionGracePeriodSeconds: 0 } };
    assert.equal(nothingLeftToSync({ record: removed, desired: terminating, absenceTrusted: true, runInFlight: true }), true);
    assert.equal(nothingLeftToSync({ record: removed, desired: terminating, absenceTrusted: true, runInFlight: false }), false, 'its deletion failed: the next event or resync runs it');
    assert.equal(nothingLeftToSync({ record: { key, phase: 'terminating', terminatingAt: 1 }, desired: terminating, absenceTrusted: true, runInFlight: true }), false, 'not removed yet: the run may have read an older object');
  });

  it('asks a sync of a removed pod whose object was not deleted here while a source has it (a finished pod being deleted)', () => {
    const finished: V1Pod = { ...pod, metadata: { ...pod.metadata, deletionTimestamp: new Date(0) } };
    assert.equal(nothingLeftToSync({ record: removed, desired: finished, absenceTrusted: true }), false);
    assert.equal(nothingLeftToSync({ record: undefined, desired: finished, absenceTrusted: true }), false);
  });
});

describe('restartDue', () => {
  const restart: PodLifecycleRecord = { ...removed, restartRequested: true };

  it('holds for a pod removed here for its restart that a source still has, and then asks no sync of it', () => {
    assert.equal(restartDue({ record: restart, desired: pod }), true);
    assert.equal(nothingLeftToSync({ record: restart, desired: pod, absenceTrusted: true }), true, 'housekeeping forgets it and starts it again');
    assert.equal(onlyForgettingLeft({ record: restart, desired: pod, absenceTrusted: true }), false);
  });

  it('does not hold before the pod is removed here, without a restart request, once its source dropped it again, or for an object deleted here', () => {
    const { removedAt: _removedAt, ...terminated } = restart;
    assert.equal(restartDue({ record: terminated, desired: pod }), false, 'terminated, not removed yet: the run removes it first');
    assert.equal(restartDue({ record: { key, phase: 'syncing', restartRequested: true }, desired: pod }), false, 'still syncing: the run stops it first');
    assert.equal(restartDue({ record: removed, desired: pod }), false, 'no restart asked: a pod removed here stays until its source drops it');
    assert.equal(restartDue({ record: restart, desired: undefined }), false, 'gone again: only forgetting is left');
    assert.equal(onlyForgettingLeft({ record: restart, desired: undefined, absenceTrusted: true }), true);
    assert.equal(restartDue({ record: { ...restart, objectDeletedAt: 4 }, desired: pod }), false, 'its object deleted here: on its way out');
    assert.equal(restartDue({ record: undefined, desired: pod }), false);
  });
});
