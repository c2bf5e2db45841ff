import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Container } from '@kubernetes/client-node';
import { chooseDevices, containerDeviceRequests, isDeviceAllocationError, mergeRunOptions, wantsPreference, type RunOptionsConflict } from './allocation.js';
import { EMPTY_ALLOCATION, type ContainerDevices } from './types.js';

const R = 'example.com/resource';

describe('chooseDevices', () => {
  it('takes the reusable devices of an init container first, then the lowest free IDs', () => {
    assert.deepEqual(chooseDevices({ resourceName: R, needed: 2, reusable: new Set(['d3']), available: new Set(['d2', 'd1']) }), ['d3', 'd1']);
  });

  it("takes the plugin's preferred devices that are available before the others", () => {
    assert.deepEqual(chooseDevices({ resourceName: R, needed: 2, reusable: new Set(), available: new Set(['a', 'b', 'c']), preferred: ['c', 'gone', 'b'] }), ['c', 'b']);
  });

  it('fills up from the available devices when the preference is short', () => {
    assert.deepEqual(chooseDevices({ resourceName: R, needed: 2, reusable: new Set(), available: new Set(['a', 'b', 'c']), preferred: ['c'] }), ['c', 'a']);
  });

  it("refuses with the kubelet's message when too few are available", () => {
    assert.throws(
      () => chooseDevices({ resourceName: R, needed: 3, reusable: new Set(['x']), available: new Set(['a']) }),
      (error: unknown) => isDeviceAllocationError(error) && error.message === `requested number of devices unavailable for ${R}. Requested: 2, Available: 1`,
    );
  });

  it('asks for a preference only when there is a choice to make', () => {
    assert.equal(wantsPreference({ resourceName: R, needed: 1, reusable: new Set(), available: new Set(['a', 'b']) }), true);
    assert.equal(wantsPreference({ resourceName: R, needed: 2, reusable: new Set(), available: new Set(['a', 'b']) }), false);
    assert.equal(wantsPreference({ resourceName: R, needed: 1, reusable: new Set(['r']), available: new Set(['a', 'b']) }), false);
  });
});

describe('containerDeviceRequests', () => {
  it('reads the device-plugin resources of the limits, whole devices, nothing else', () => {
    const container: V1Container = { name: 'c', resources: { limits: { cpu: '1', [R]: '2', 'other.com/x': '1', 'example.com/zero': '0' } } };
    assert.deepEqual([...containerDeviceRequests(container, (n) => n.startsWith('example.com/'))], [[R, 2]]);
  });
});

describe('mergeRunOptions', () => {
  const devices = (resourceName: string, allocation: Partial<ContainerDevices['allocation']>): ContainerDevices => ({ resourceName, devicesPerNuma: {}, allocation: { ...EMPTY_ALLOCATION, ...allocation } });

  it('keeps the first of each env, device node, mount and annotation, and every CDI device once, reporting conflicts', () => {
    const conflicts: RunOptionsConflict[] = [];
    const merged = mergeRunOptions(
      [
        devices('a.com/x', { envs: { A: '1', S: 'same' }, devices: [{ containerPath: '/dev/x', hostPath: '/dev/x0', permissions: 'rw' }], mounts: [{ containerPath: '/m', hostPath: '/h1', readOnly: false }], annotations: { k: 'v1' }, cdiDevices: ['a.com/x=0'] }),
        devices('b.com/y', { envs: { A: '2', S: 'same' }, devices: [{ containerPath: '/dev/x', hostPath: '/dev/x1', permissions: 'r' }], mounts: [{ containerPath: '/m', hostPath: '/h2', readOnly: true }], annotations: { k: 'v2' }, cdiDevices: ['a.com/x=0', 'b.com/y=1'] }),
      ],
      (c) => conflicts.push(c),
    );
    assert.deepEqual(merged.envs, [{ key: 'A', value: '1' }, { key: 'S', value: 'same' }]);
    assert.deepEqual(merged.devices, [{ containerPath: '/dev/x', hostPath: '/dev/x0', permissions: 'rw' }]);
    assert.deepEqual(merged.mounts, [{ containerPath: '/m', hostPath: '/h1', readOnly: false }]);
    assert.deepEqual(merged.annotations, { k: 'v1' });
    assert.deepEqual(merged.cdiDevices, ['a.com/x=0', 'b.com/y=1']);
    assert.deepEqual(conflicts.map((c) => `${c.kind}:${c.key}`), ['env:A', 'device:/dev/x', 'mount:/m', 'annotation:k']);
  });
});
