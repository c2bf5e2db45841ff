import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { DeviceAdmissionView } from '../devices/device-manager.js';
import { admitHandlers, admitPod } from './index.js';
import { deviceAdmitHandler, withAllocatedDevices } from './devices.js';
import { APPARMOR_NOT_ENABLED } from './apparmor.js';

const R = 'example.com/resource';

function view(state: { healthy: string[]; held?: Record<string, string[]> }): DeviceAdmissionView {
  const held = state.held ?? {};
  return {
    isDeviceResource: (name) => name === R,
    healthyDevices: () => new Set(state.healthy),
    devicesInUse: (except) => new Map([[R, new Set(Object.entries(held).filter(([uid]) => uid !== except).flatMap(([, ids]) => ids))]]),
    podDevices: (uid) => (held[uid] === undefined ? new Map() : new Map([[R, new Set(held[uid])]])),
  };
}

function pod(uid: string, count: number, created = '2030-01-01T00:00:00Z'): V1Pod {
  return { metadata: { uid, name: uid, namespace: 'default', creationTimestamp: new Date(created) }, spec: { containers: [{ name: 'app', image: 'busybox', resources: { limits: { [R]: String(count) }, requests: { [R]: String(count) } } }] } };
}

const node: V1Node = { metadata: { name: 'n', labels: { 'kubernetes.io/os': 'linux' } }, status: { allocatable: { cpu: '2', memory: '4Gi', pods: '110', [R]: '2' } } };

describe('device admission', () => {
  it('admits a pod whose devices are healthy and free', () => {
    assert.deepEqual(deviceAdmitHandler(view({ healthy: ['d1', 'd2'] })).admit({ pod: pod('a', 2), node, otherPods: [] }), { admit: true });
  });

  it("rejects a pod asking for more than is free with the kubelet's UnexpectedAdmissionError and message", () => {
    const result = deviceAdmitHandler(view({ healthy: ['d1', 'd2'], held: { b: ['d1'] } })).admit({ pod: pod('a', 2), node, otherPods: [pod('b', 1)] });
    assert.deepEqual(result, { admit: false, reason: 'UnexpectedAdmissionError', message: `Allocate failed due to requested number of devices unavailable for ${R}. Requested: 2, Available: 1, which is unexpected` });
  });

  it('counts what admitted pods wait for and do not hold yet', () => {
    const result = deviceAdmitHandler(view({ healthy: ['d1', 'd2'] })).admit({ pod: pod('a', 1), node, otherPods: [pod('b', 2)] });
    assert.equal(result.admit, false);
  });

  it('admits a pod that already holds its devices (an agent restart), even before its plugin is back', () => {
    const handler = deviceAdmitHandler(view({ healthy: [], held: { a: ['d1'] } }));
    assert.deepEqual(handler.admit({ pod: pod('a', 1), node, otherPods: [] }), { admit: true });
    assert.equal(handler.admit({ pod: pod('c', 1), node, otherPods: [] }).admit, false);
  });

  it('raises the allocatable the predicates see to what is allocated when the pod holds devices (sanitizeNodeAllocatable)', () => {
    const stale: V1Node = { ...node, status: { allocatable: { ...node.status!.allocatable, [R]: '0' } } };
    const devices = view({ healthy: [], held: { a: ['d1'], b: ['d2'] } });
    assert.equal(withAllocatedDevices(pod('a', 1), stale, devices).status?.allocatable?.[R], '2');
    assert.equal(withAllocatedDevices(pod('c', 1), stale, devices), stale);
  });

  it("runs before the general predicates, as the kubelet's resource allocation handler: a restarted agent's pod is not OutOf… for its own devices", () => {
    const stale: V1Node = { ...node, status: { allocatable: { ...node.status!.allocatable, [R]: '0' } } };
    const handlers = admitHandlers({ allowedUnsafeSysctls: [], kernelVersion: '6.1', appArmor: { enabled: false, error: APPARMOR_NOT_ENABLED }, devices: view({ healthy: [], held: { a: ['d1'] } }) });
    assert.deepEqual(admitPod(handlers, { pod: pod('a', 1), node: stale, otherPods: [] }), { admit: true });
    const fresh = admitPod(handlers, { pod: pod('c', 1), node: stale, otherPods: [] });
    assert.equal(fresh.admit ? '' : fresh.reason, 'UnexpectedAdmissionError');
    // With free devices but a Node that does not advertise enough: the predicates' OutOf<resource>.
    const free = admitHandlers({ allowedUnsafeSysctls: [], kernelVersion: '6.1', appArmor: { enabled: false, error: APPARMOR_NOT_ENABLED }, devices: view({ healthy: ['d1', 'd2', 'd3'] }) });
    const out = admitPod(free, { pod: pod('c', 3), node, otherPods: [] });
    assert.deepEqual(out.admit ? undefined : [out.reason, out.message], [`OutOf${R}`, `Node didn't have enough resource: ${R}, requested: 3, used: 0, capacity: 2`]);
  });
});
