import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiException, type V1PodStatus } from '@kubernetes/client-node';
import { canonicalStatus, isPodGone, statusPatch } from './status-patch.js';

const T0 = new Date('2026-01-01T00:00:00Z');

interface PatchBody {
  metadata: { uid: string };
  status: Record<string, unknown> & { conditions: Record<string, unknown>[] };
}

function patchOf(status: V1PodStatus): PatchBody {
  return statusPatch('u1', status) as unknown as PatchBody;
}

describe('statusPatch (strategic merge patch of the owned status)', () => {
  it('carries the pod UID as a precondition', () => {
    assert.deepEqual(patchOf({ phase: 'Running' }).metadata, { uid: 'u1' });
  });

  it('never sends a condition nodelet does not own, so the server keeps the one it has; PodScheduled True goes back as it is (the kubelet writes it too)', () => {
    const patch = patchOf({
      conditions: [
        { type: 'PodScheduled', status: 'True', lastTransitionTime: T0 },
        { type: 'example.com/gate', status: 'True', lastTransitionTime: T0 },
        { type: 'DisruptionTarget', status: 'True', lastTransitionTime: T0 },
        { type: 'Ready', status: 'True', lastTransitionTime: T0 },
      ],
    });
    const types = patch.status.conditions.map((c) => c.type);
    assert.deepEqual(patch.status.conditions.filter((c) => c.type === 'PodScheduled').map((c) => [c.status, c.lastTransitionTime]), [['True', T0]]);
    assert.ok(!types.includes('example.com/gate'));
    assert.ok(!types.includes('DisruptionTarget'));
    assert.deepEqual(patch.status.conditions.find((c) => c.type === 'Ready' && c.$patch === undefined)?.status, 'True');
  });

  it('sends the DisruptionTarget nodelet sets on a pod it evicts, and no other writer\'s', () => {
    const evicted: V1PodStatus = { phase: 'Failed', conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet', message: 'low on memory' }] };
    const sent = (statusPatch('u', evicted).status as { conditions: { type: string; reason?: string | null }[] }).conditions;
    assert.deepEqual(sent.filter((c) => c.type === 'DisruptionTarget').map((c) => c.reason), ['TerminationByKubelet']);
    assert.notEqual(canonicalStatus(evicted), canonicalStatus({ phase: 'Failed' }), 'adding it is a change to write');
    const preempted: V1PodStatus = { phase: 'Failed', conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'PreemptionByScheduler' }] };
    const notSent = (statusPatch('u', preempted).status as { conditions: { type: string }[] }).conditions;
    assert.equal(notSent.some((c) => c.type === 'DisruptionTarget'), false);
  });

  it('removes an owned condition type the status no longer has with a delete directive', () => {
    const patch = patchOf({ conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: T0 }] });
    const deleted = patch.status.conditions.filter((c) => c.$patch === 'delete').map((c) => c.type);
    assert.deepEqual(deleted.sort(), ['AllContainersRestarting', 'ContainersReady', 'Initialized', 'PodReadyToStartContainers', 'PodResizeInProgress', 'PodResizePending']);
    // Each delete entry is only the merge key and the directive.
    for (const entry of patch.status.conditions.filter((c) => c.$patch === 'delete')) assert.deepEqual(Object.keys(entry).sort(), ['$patch', 'type']);
  });

  it('clears the fields an owned condition no longer has (conditions merge field by field)', () => {
    const patch = patchOf({ conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: T0 }] });
    const ready = patch.status.conditions.find((c) => c.type === 'Ready');
    assert.deepEqual(ready, { type: 'Ready', status: 'True', reason: null, message: null, lastTransitionTime: T0, lastProbeTime: null, observedGeneration: null });
  });

  it('replaces the IP lists (they merge by ip on the server) and clears unset owned fields', () => {
    const patch = patchOf({ phase: 'Running', podIPs: [{ ip: '10.0.0.2' }], hostIPs: [] });
    assert.deepEqual(patch.status.podIPs, [{ ip: '10.0.0.2' }, { $patch: 'replace' }]);
    assert.equal(patch.status.hostIPs, null);
    assert.equal(patch.status.podIP, null);
    assert.equal(patch.status.reason, null);
    assert.equal(patch.status.containerStatuses, null);
    assert.equal(patch.status.phase, 'Running');
  });

  it('sends container status lists whole (the server replaces them)', () => {
    const containerStatuses = [{ name: 'app', ready: true, restartCount: 0, image: 'i', imageID: '' }];
    assert.deepEqual(patchOf({ containerStatuses }).status.containerStatuses, containerStatuses);
  });

  it('sends ephemeralContainerStatuses whole, and counts them as a change', () => {
    const ephemeralContainerStatuses = [{ name: 'debugger', ready: false, restartCount: 0, image: 'i', imageID: '', state: { running: {} } }];
    assert.deepEqual(patchOf({ ephemeralContainerStatuses }).status.ephemeralContainerStatuses, ephemeralContainerStatuses);
    assert.equal(patchOf({}).status.ephemeralContainerStatuses, null);
    assert.notEqual(canonicalStatus({ ephemeralContainerStatuses }), canonicalStatus({}));
  });
});

describe('canonicalStatus', () => {
  it("compares at the API server's one-second precision", () => {
    assert.equal(canonicalStatus({ startTime: new Date('2026-01-01T00:00:00.999Z') }), canonicalStatus({ startTime: '2026-01-01T00:00:00Z' as unknown as Date }));
  });

  it('ignores conditions nodelet does not own and the order of owned ones', () => {
    const ready = { type: 'Ready', status: 'True', lastTransitionTime: T0 };
    const initialized = { type: 'Initialized', status: 'True', lastTransitionTime: T0 };
    const gate = { type: 'example.com/gate', status: 'False', lastTransitionTime: T0 };
    assert.equal(canonicalStatus({ conditions: [ready, initialized] }), canonicalStatus({ conditions: [gate, initialized, ready] }));
    assert.notEqual(canonicalStatus({ conditions: [ready] }), canonicalStatus({ conditions: [ready, initialized] }));
  });

  it('finds a status equal to its form as the API server sends it back: nulls, empty maps and empty lists left out', () => {
    const handedOver: V1PodStatus = {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: T0 }],
      containerStatuses: [{ name: 'app', image: 'busybox', imageID: '', ready: true, restartCount: 0, allocatedResources: {}, resources: { requests: {}, limits: {} }, state: { running: { startedAt: T0 } } }],
      podIPs: [],
    };
    const returned = JSON.parse(JSON.stringify({
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: T0, lastProbeTime: null }],
      containerStatuses: [{ name: 'app', image: 'busybox', imageID: '', ready: true, restartCount: 0, resources: {}, state: { running: { startedAt: T0 } } }],
    })) as V1PodStatus;
    assert.equal(canonicalStatus(handedOver), canonicalStatus(returned));
    const notReady = { ...returned, containerStatuses: [{ ...returned.containerStatuses![0]!, ready: false }] };
    assert.notEqual(canonicalStatus(handedOver), canonicalStatus(notReady), 'false and 0 are values, not empty');
  });
});

describe('isPodGone', () => {
  const apiError = (code: number, body: object): ApiException<string> => new ApiException(code, `HTTP-Code: ${code}`, JSON.stringify({ kind: 'Status', code, ...body }), {});

  it('counts 404, 409 and a 422 on metadata.uid (a new pod took the name) as gone', () => {
    assert.equal(isPodGone(apiError(404, { reason: 'NotFound' })), true);
    assert.equal(isPodGone(apiError(409, { reason: 'Conflict' })), true);
    assert.equal(isPodGone(apiError(422, { reason: 'Invalid', details: { causes: [{ field: 'metadata.uid' }] } })), true);
  });

  it('keeps every other failure a failure, to be retried', () => {
    assert.equal(isPodGone(apiError(422, { reason: 'Invalid', details: { causes: [{ field: 'status.podIPs' }] } })), false);
    assert.equal(isPodGone(apiError(500, { reason: 'InternalError' })), false);
    assert.equal(isPodGone(new Error('connect ECONNREFUSED')), false);
  });
});
