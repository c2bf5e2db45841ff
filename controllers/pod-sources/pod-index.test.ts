import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { createPodIndex } from './pod-index.js';

function pod(name: string, uid: string, resourceVersion: string): V1Pod {
  return { metadata: { name, namespace: 'ns', uid, resourceVersion } };
}

describe('pod index', () => {
  it('tells added, updated and unchanged apart by UID and resourceVersion', () => {
    const index = createPodIndex();
    assert.equal(index.upsert(pod('a', 'u1', '1'))?.kind, 'added');
    assert.equal(index.upsert(pod('a', 'u1', '1'))?.kind, 'unchanged');
    assert.equal(index.upsert({ ...pod('a', 'u1', '2'), spec: { containers: [] } })?.kind, 'updated');
    assert.equal(index.get('u1')?.metadata?.resourceVersion, '2');
  });

  it('tells a version that changed only the status (and write bookkeeping) from one that changed the pod', () => {
    const index = createPodIndex();
    const base = (rv: string, extra: Partial<V1Pod> = {}): V1Pod => ({ ...pod('a', 'u1', rv), spec: { containers: [{ name: 'c' }] }, ...extra });
    index.upsert(base('1'));
    assert.equal(index.upsert(base('2', { status: { phase: 'Running' } }))?.kind, 'status-updated');
    const withFields = base('3', { status: { phase: 'Running', message: 'x' } });
    withFields.metadata!.managedFields = [{ manager: 'nodelet', operation: 'Update' }];
    assert.equal(index.upsert(withFields)?.kind, 'status-updated');
    const deleted = base('4');
    deleted.metadata!.deletionTimestamp = new Date(0);
    assert.equal(index.upsert(deleted)?.kind, 'updated', 'a deletion is a change of the pod');
    assert.equal(index.upsert(base('5', { spec: { containers: [{ name: 'c', image: 'b' }] } }))?.kind, 'updated');
    const labelled = base('6', { spec: { containers: [{ name: 'c', image: 'b' }] } });
    labelled.metadata!.labels = { a: 'b' };
    assert.equal(index.upsert(labelled)?.kind, 'updated');
  });

  it('treats a new UID under a known name as a replacement of the old pod', () => {
    const index = createPodIndex();
    index.upsert(pod('a', 'u1', '1'));
    const outcome = index.upsert(pod('a', 'u2', '5'));
    assert.deepEqual(outcome, { ref: { uid: 'u2', namespace: 'ns', name: 'a' }, kind: 'added', replaced: { uid: 'u1', namespace: 'ns', name: 'a' } });
    assert.equal(index.get('u1'), undefined);
    assert.deepEqual(index.refs().map((r) => r.uid), ['u2']);
  });

  it('removes by UID and ignores pods it never stored or without a UID', () => {
    const index = createPodIndex();
    index.upsert(pod('a', 'u1', '1'));
    assert.deepEqual(index.remove(pod('a', 'u1', '2')), { uid: 'u1', namespace: 'ns', name: 'a' });
    assert.equal(index.remove(pod('a', 'u1', '2')), undefined);
    assert.equal(index.upsert({ metadata: { name: 'no-uid' } }), undefined);
    assert.equal(index.list().length, 0);
  });

  it('replaces its contents with a full list and returns the UIDs that vanished', () => {
    const index = createPodIndex();
    index.upsert(pod('a', 'u1', '1'));
    index.upsert(pod('b', 'u2', '1'));
    index.upsert(pod('c', 'u3', '1'));
    const vanished = index.replaceAll([pod('a', 'u1', '3'), pod('c', 'u4', '4'), pod('d', 'u5', '4')]);
    assert.deepEqual(vanished.map((r) => r.uid).sort(), ['u2', 'u3']);
    assert.deepEqual(index.refs().map((r) => r.uid).sort(), ['u1', 'u4', 'u5']);
    assert.equal(index.get('u1')?.metadata?.resourceVersion, '3');
  });
});
