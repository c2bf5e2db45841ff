import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import type { DesiredPodSource } from './pod-store.js';
import { mergedStaticPods } from './static-pods.js';

function source(name: string, synced: boolean, pods: V1Pod[]): DesiredPodSource {
  return { name, start: () => Promise.resolve(), stop: () => undefined, get: (uid) => pods.find((p) => p.metadata?.uid === uid), list: () => pods, synced: () => synced, healthy: () => true };
}

describe("the mirror manager's view over both static sources", () => {
  const filePod: V1Pod = { metadata: { uid: 'f', name: 'a-n1' } };
  const urlPod: V1Pod = { metadata: { uid: 'u', name: 'b-n1' } };
  const view = mergedStaticPods([source('file', true, [filePod]), source('http', false, [urlPod])]);

  it('lists and finds the pods of both', () => {
    assert.deepEqual(view.list().map((p) => p.metadata?.uid), ['f', 'u']);
    assert.equal(view.get('u'), urlPod);
    assert.equal(view.get('x'), undefined);
  });

  it('is synced per source; a source not configured counts as synced (its mirror pods are orphans)', () => {
    assert.equal(view.synced('file'), true);
    assert.equal(view.synced('http'), false);
    assert.equal(view.synced(), false, 'no source named: every static source');
    assert.equal(mergedStaticPods([source('file', true, [])]).synced('http'), true, 'no URL configured: its old mirror pods may go');
  });
});
