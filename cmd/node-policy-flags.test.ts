import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseSettings } from './flags.js';

const required = ['--cri-endpoint', 'unix:///run/containerd/containerd.sock'];

function settingsOf(...argv: string[]): Exclude<ReturnType<typeof parseSettings>, 'help'> {
  const settings = parseSettings([...required, ...argv], {});
  assert.notEqual(settings, 'help');
  if (settings === 'help') throw new Error('help');
  return settings;
}

describe('node-policy flags', () => {
  it("default to the kubelet's: nothing reserved, serialized pulls at 5 QPS with a burst of 10", () => {
    const settings = settingsOf();
    assert.deepEqual(settings.systemReserved, {});
    assert.deepEqual(settings.kubeReserved, {});
    assert.deepEqual(settings.imagePulls, { serializeImagePulls: true, maxParallelImagePulls: null, registryPullQPS: 5, registryBurst: 10 });
  });

  it('read reservations as resource=quantity lists', () => {
    const settings = settingsOf('--system-reserved', 'cpu=100m, memory=512Mi', '--kube-reserved=ephemeral-storage=1Gi,pid=100');
    assert.deepEqual(settings.systemReserved, { cpu: '100m', memory: '512Mi' });
    assert.deepEqual(settings.kubeReserved, { 'ephemeral-storage': '1Gi', pid: '100' });
  });

  it('refuse bad reservations and pull settings before anything starts', () => {
    for (const argv of [
      ['--system-reserved', 'gpu=1'],
      ['--system-reserved', 'cpu'],
      ['--kube-reserved', 'memory=lots'],
      ['--serialize-image-pulls', 'no'],
      ['--max-parallel-image-pulls', '3'],
      ['--max-parallel-image-pulls', '0', '--serialize-image-pulls', 'false'],
      ['--registry-qps', '-1'],
      ['--registry-burst', '1.5'],
    ]) {
      assert.throws(() => parseSettings([...required, ...argv], {}), { name: 'FlagError' }, argv.join(' '));
    }
  });

  it('take parallel pulls with serialization off', () => {
    const settings = settingsOf('--serialize-image-pulls=false', '--max-parallel-image-pulls', '3', '--registry-qps', '0.5', '--registry-burst', '1');
    assert.deepEqual(settings.imagePulls, { serializeImagePulls: false, maxParallelImagePulls: 3, registryPullQPS: 0.5, registryBurst: 1 });
  });
});
