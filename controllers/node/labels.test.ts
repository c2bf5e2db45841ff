import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defaultNodeLabels, forbiddenNodeLabels, labelsToReconcile } from './labels.js';

describe('node labels', () => {
  it('labels the node with its name, os and architecture', () => {
    assert.deepEqual(defaultNodeLabels('worker-1', 'arm64'), {
      'kubernetes.io/hostname': 'worker-1',
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': 'arm64',
    });
  });

  it('forbids the labels NodeRestriction refuses and allows kubelet labels and foreign domains', () => {
    const labels = {
      'node-role.kubernetes.io/worker': '',
      'node-restriction.kubernetes.io/pool': 'a',
      'example.node-restriction.kubernetes.io/x': 'y',
      'foo.k8s.io/bar': 'baz',
      'kubernetes.io/hostname': 'n',
      'topology.kubernetes.io/zone': 'z1',
      'node.kubernetes.io/instance-type': 'big',
      'kubelet.kubernetes.io/anything': 'ok',
      'team.node.kubernetes.io/owner': 'ok',
      'nodelet.dev/agent': 'true',
      plain: 'label',
    };
    assert.deepEqual(forbiddenNodeLabels(labels), [
      'example.node-restriction.kubernetes.io/x',
      'foo.k8s.io/bar',
      'node-restriction.kubernetes.io/pool',
      'node-role.kubernetes.io/worker',
    ]);
  });

  it('patches only owned labels that are missing or different, leaving others alone', () => {
    const existing = { 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'arm64', 'team': 'blue' };
    const desired = { 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', 'kubernetes.io/hostname': 'n' };
    assert.deepEqual(labelsToReconcile(existing, desired), { 'kubernetes.io/arch': 'amd64', 'kubernetes.io/hostname': 'n' });
    assert.deepEqual(labelsToReconcile(undefined, { a: 'b' }), { a: 'b' });
    assert.deepEqual(labelsToReconcile(desired, desired), {});
  });
});
