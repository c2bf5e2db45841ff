/** containerStatuses[].volumeMounts as the kubelet writes them. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Container } from '@kubernetes/client-node';
import { volumeMountStatuses } from './volume-mount-statuses.js';
import { basePod, container, observation, sandbox } from '../../test/doubles/pod-fixtures.js';
import { generatePodStatus } from './generate-pod-status.js';

const SPEC: V1Container = {
  name: 'app',
  image: 'busybox:1.35',
  volumeMounts: [
    { name: 'data', mountPath: '/data' },
    { name: 'config', mountPath: '/config', readOnly: true },
    { name: 'tree', mountPath: '/tree', readOnly: true, recursiveReadOnly: 'IfPossible' },
    { name: 'strict', mountPath: '/strict', readOnly: true, recursiveReadOnly: 'Enabled' },
  ],
};

describe('containerStatuses[].volumeMounts', () => {
  it('lists every mount; read-only ones with readOnly and the recursive mode they got', () => {
    assert.deepEqual(volumeMountStatuses(SPEC, true, undefined).volumeMounts, [
      { name: 'data', mountPath: '/data' },
      { name: 'config', mountPath: '/config', readOnly: true, recursiveReadOnly: 'Disabled' },
      { name: 'tree', mountPath: '/tree', readOnly: true, recursiveReadOnly: 'Enabled' },
      { name: 'strict', mountPath: '/strict', readOnly: true, recursiveReadOnly: 'Enabled' },
    ]);
    const unsupported = volumeMountStatuses(SPEC, false, undefined).volumeMounts ?? [];
    assert.deepEqual(unsupported.map((m) => m.recursiveReadOnly), [undefined, 'Disabled', 'Disabled', 'Disabled'], 'IfPossible falls back; Enabled that cannot be had reads Disabled, as the kubelet logs it');
  });

  it('waits for the handler\'s support when a mount asks for a recursive mode, keeps what the API shows, and writes nothing for no mounts', () => {
    assert.deepEqual(volumeMountStatuses(SPEC, undefined, undefined), {});
    assert.deepEqual(volumeMountStatuses({ ...SPEC, volumeMounts: [{ name: 'data', mountPath: '/data', readOnly: true }] }, undefined, undefined).volumeMounts, [{ name: 'data', mountPath: '/data', readOnly: true, recursiveReadOnly: 'Disabled' }]);
    const previous = { name: 'app', image: 'x', imageID: '', ready: false, restartCount: 0, volumeMounts: [{ name: 'old', mountPath: '/old' }] };
    assert.deepEqual(volumeMountStatuses(SPEC, true, previous).volumeMounts, [{ name: 'old', mountPath: '/old' }], 'immutable once shown');
    assert.deepEqual(volumeMountStatuses({ name: 'bare' }, true, undefined), {});
  });

  it('reads the support of the pod\'s sandbox\'s handler in the generated status', () => {
    const pod = basePod((p) => {
      p.spec!.runtimeClassName = 'fast';
      p.spec!.containers = [SPEC];
    });
    const input = { pod, nodeIp: '10.213.0.1', runtimeName: 'containerd', now: new Date('2026-01-01T00:00:10Z'), startFailures: new Map() };
    const asked: string[] = [];
    const recursiveReadOnlyOf = (handler: string): boolean => { asked.push(handler); return handler === 'kata'; };
    const before = generatePodStatus({ ...input, observed: observation([], []), recursiveReadOnlyOf });
    assert.equal(before.containerStatuses?.[0]?.volumeMounts, undefined, 'a RuntimeClass pod before its sandbox: not known yet');
    const after = generatePodStatus({ ...input, observed: observation([sandbox({ runtimeHandler: 'kata' })], [container(pod, 'app')]), recursiveReadOnlyOf });
    assert.equal(after.containerStatuses?.[0]?.volumeMounts?.[2]?.recursiveReadOnly, 'Enabled');
    assert.deepEqual(asked, ['kata']);
  });
});
