/**
 * The API event recorder as a per-pod manager: it folds repeats into a count patch while it holds
 * the pod's aggregate, and drops exactly that pod's aggregates when the lifecycle forgets the pod.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CoreV1Event } from '@kubernetes/client-node';
import type { CoreV1Client } from '../../kube/core-v1.js';
import { pino } from 'pino';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { basePod } from '../../test/doubles/pod-fixtures.js';
import { ApiEventRecorder } from './api-event-recorder.js';

/** The two calls the recorder makes, recorded as `create <reason>` / `patch <name> count=<n>`. */
function fakeCore(calls: string[]): Pick<CoreV1Client, 'createNamespacedEvent' | 'patchNamespacedEvent'> {
  return {
    createNamespacedEvent: (req: { body: CoreV1Event }) => {
      calls.push(`create ${req.body.reason ?? ''} for ${req.body.involvedObject.uid ?? ''}`);
      return Promise.resolve(req.body);
    },
    patchNamespacedEvent: (req: { name: string; body: object }) => {
      calls.push(`patch count=${'count' in req.body ? String(req.body.count) : '?'}`);
      return Promise.resolve({ involvedObject: {}, metadata: {} });
    },
  };
}

describe('ApiEventRecorder as a per-pod manager', () => {
  it("forgets the forgotten pod's aggregates and no other pod's", async () => {
    const calls: string[] = [];
    const recorder = new ApiEventRecorder({ core: fakeCore(calls), nodeName: 'node-a', clock: createFakeClock(Date.parse('2026-01-01T00:00:00Z')), logger: pino({ level: 'silent' }) });
    const a = basePod((p) => (p.metadata!.uid = 'uid-a'));
    const b = basePod((p) => {
      p.metadata!.uid = 'uid-b';
      p.metadata!.name = 'other';
    });
    const event = { type: 'Warning', reason: 'BackOff', message: 'Back-off restarting failed container' } as const;
    recorder.record(a, event);
    recorder.record(b, event);
    recorder.record(a, event);
    await recorder.flush();
    assert.deepEqual(calls, ['create BackOff for uid-a', 'create BackOff for uid-b', 'patch count=2']);
    assert.equal(recorder.aggregateCount, 2);

    recorder.podForgotten({ uid: 'uid-a', namespace: 'default', name: 'web' });
    assert.equal(recorder.aggregateCount, 1, "only uid-b's aggregate is left");
    recorder.record(b, event);
    await recorder.flush();
    assert.equal(calls.at(-1), 'patch count=2', "uid-b's aggregate still folds repeats");
  });

  it("writes a Node's events in namespace default, about the Node by name and UID (no namespace, as the kubelet's node reference), folding repeats", async () => {
    const bodies: CoreV1Event[] = [];
    const calls: string[] = [];
    const core = fakeCore(calls);
    const recorder = new ApiEventRecorder({
      core: { ...core, createNamespacedEvent: (req: { namespace: string; body: CoreV1Event }) => (bodies.push({ ...req.body, metadata: { ...req.body.metadata, namespace: req.namespace } }), core.createNamespacedEvent(req)) },
      nodeName: 'node-a',
      clock: createFakeClock(Date.parse('2026-01-01T00:00:00Z')),
      logger: pino({ level: 'silent' }),
    });
    const event = { type: 'Normal', reason: 'NodeReady', message: 'Node node-a status is now: NodeReady' } as const;
    recorder.recordNode({ name: 'node-a', uid: 'node-uid' }, event);
    recorder.recordNode({ name: 'node-a', uid: 'node-uid' }, event);
    await recorder.flush();
    assert.deepEqual(calls, ['create NodeReady for node-uid', 'patch count=2']);
    assert.equal(bodies[0]?.metadata.namespace, 'default');
    assert.deepEqual(bodies[0]?.involvedObject, { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'node-uid' });
    assert.deepEqual(bodies[0]?.source, { component: 'nodelet', host: 'node-a' });
  });
});
