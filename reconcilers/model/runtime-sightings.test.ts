import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildSnapshot } from '../../controllers/pleg/pleg.js';
import type { ObservedContainer, ObservedPod, ObservedSandbox } from './observed-pod.js';
import { emptyObservation } from './observed-pod.js';
import { observedFingerprint, RuntimeSightings } from './runtime-sightings.js';

const sandbox = (id: string, state: ObservedSandbox['state']): ObservedSandbox => ({ id, state, attempt: 0, createdAt: new Date(0), ip: '', additionalIps: [] });
const container = (id: string, state: ObservedContainer['state']): ObservedContainer => ({
  id, name: id, sandboxId: 's1', state, restartCount: 0, specHash: '', image: 'busybox', imageRef: 'sha256:1', createdAt: new Date(0), exitCode: 0, reason: '', message: '', annotations: {},
});

describe('observedFingerprint', () => {
  it('describes an observation exactly as PLEG describes the same objects from its listing, whatever their order', () => {
    const observed: ObservedPod = { uid: 'a', sandboxes: [sandbox('s2', 'SANDBOX_READY'), sandbox('s1', 'SANDBOX_NOTREADY')], containers: [container('c2', 'CONTAINER_RUNNING'), container('c1', 'CONTAINER_EXITED')] };
    const labels = { 'io.kubernetes.pod.uid': 'a' };
    const listed = buildSnapshot([
      { kind: 'container', id: 'c1', state: 'CONTAINER_EXITED', labels },
      { kind: 'sandbox', id: 's1', state: 'SANDBOX_NOTREADY', labels },
      { kind: 'container', id: 'c2', state: 'CONTAINER_RUNNING', labels },
      { kind: 'sandbox', id: 's2', state: 'SANDBOX_READY', labels },
    ]);
    assert.equal(observedFingerprint(observed), listed.get('a')?.fingerprint);
  });

  it('tells states apart and describes nothing as the empty string (a pod that vanished)', () => {
    const running: ObservedPod = { uid: 'a', sandboxes: [sandbox('s1', 'SANDBOX_READY')], containers: [container('c1', 'CONTAINER_RUNNING')] };
    const exited: ObservedPod = { ...running, containers: [container('c1', 'CONTAINER_EXITED')] };
    assert.notEqual(observedFingerprint(running), observedFingerprint(exited));
    assert.equal(observedFingerprint(emptyObservation('a')), '');
  });
});

describe('RuntimeSightings', () => {
  it('matches only the newest report of a pod, once', () => {
    const sightings = new RuntimeSightings();
    sightings.reported('a', 'old');
    sightings.reported('a', 'new');
    assert.equal(sightings.alreadyReported('a', 'old'), false);
    assert.equal(sightings.alreadyReported('b', 'new'), false);
    assert.equal(sightings.alreadyReported('a', 'new'), true);
    assert.equal(sightings.alreadyReported('a', 'new'), false, 'consumed');
    assert.equal(sightings.size(), 0);
  });

  it('forgets the pods reported longest ago beyond its capacity', () => {
    const sightings = new RuntimeSightings(2);
    sightings.reported('a', 'x');
    sightings.reported('b', 'x');
    sightings.reported('a', 'y');
    sightings.reported('c', 'x');
    assert.equal(sightings.size(), 2);
    assert.equal(sightings.alreadyReported('b', 'x'), false, 'b was the oldest report');
    assert.equal(sightings.alreadyReported('a', 'y'), true);
    assert.equal(sightings.alreadyReported('c', 'x'), true);
    assert.throws(() => new RuntimeSightings(0), RangeError);
  });
});
