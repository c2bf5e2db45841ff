import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1ContainerStatus, V1Pod, V1PodCondition } from '@kubernetes/client-node';
import { readinessConditions, readinessNeedsReconcile } from './pod-conditions.js';

const readyContainer: V1ContainerStatus = { name: 'app', image: 'busybox', imageID: '', restartCount: 0, ready: true, state: { running: {} } };

function gatedPod(gates: readonly string[], conditions: V1PodCondition[], ready?: { status: string; message?: string }): V1Pod {
  return {
    metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
    spec: { containers: [{ name: 'app', image: 'busybox' }], readinessGates: gates.map((conditionType) => ({ conditionType })) },
    status: {
      phase: 'Running',
      containerStatuses: [readyContainer],
      conditions: [...conditions, ...(ready === undefined ? [] : [{ type: 'Ready', ...ready }])],
    },
  };
}

function readyOf(pod: V1Pod): V1PodCondition | undefined {
  return readinessConditions({ pod, conditions: pod.status?.conditions ?? [], phase: 'Running' }, pod.status?.containerStatuses ?? []).find((c) => c.type === 'Ready');
}

describe('the Ready condition with readiness gates', () => {
  it('names each unmet gate in the kubelet\'s words, missing and not True apart, in the spec\'s order', () => {
    const pod = gatedPod(['example.com/a', 'example.com/b', 'example.com/c'], [
      { type: 'example.com/b', status: 'False' },
      { type: 'example.com/c', status: 'True' },
    ]);
    assert.deepEqual(readyOf(pod), {
      type: 'Ready',
      status: 'False',
      reason: 'ReadinessGatesNotReady',
      message: 'corresponding condition of pod readiness gate "example.com/a" does not exist., the status of pod readiness gate "example.com/b" is not "True", but False',
    });
  });

  it('is True once every gate is True', () => {
    assert.deepEqual(readyOf(gatedPod(['example.com/a'], [{ type: 'example.com/a', status: 'True' }])), { type: 'Ready', status: 'True' });
  });
});

describe('readinessNeedsReconcile (the kubelet\'s NeedToReconcilePodReadiness)', () => {
  const notExist = 'corresponding condition of pod readiness gate "example.com/a" does not exist.';

  it('asks for a sync when another writer set a gate the written Ready does not reflect', () => {
    const pod = gatedPod(['example.com/a'], [{ type: 'example.com/a', status: 'True' }], { status: 'False', message: notExist });
    assert.equal(readinessNeedsReconcile(pod), true);
  });

  it('asks for a sync when only the message is stale (a gate went from missing to False)', () => {
    const pod = gatedPod(['example.com/a'], [{ type: 'example.com/a', status: 'False' }], { status: 'False', message: notExist });
    assert.equal(readinessNeedsReconcile(pod), true);
  });

  it('leaves the echo of a consistent write alone', () => {
    assert.equal(readinessNeedsReconcile(gatedPod(['example.com/a'], [], { status: 'False', message: notExist })), false);
    assert.equal(readinessNeedsReconcile(gatedPod(['example.com/a'], [{ type: 'example.com/a', status: 'True' }], { status: 'True' })), false);
  });

  it('leaves pods without gates, or without a Ready condition yet, alone', () => {
    const ungated = gatedPod([], [], { status: 'False', message: 'stale' });
    assert.equal(readinessNeedsReconcile(ungated), false);
    assert.equal(readinessNeedsReconcile(gatedPod(['example.com/a'], [{ type: 'example.com/a', status: 'True' }])), false);
  });
});
