import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FlagError, parseSettings } from './flags.js';

describe('GC flags', () => {
  it("default to the kubelet's policy and sandbox image", () => {
    const s = parseSettings(['--cri-endpoint', 'x'], {});
    assert.ok(s !== 'help');
    assert.deepEqual(s.gc, { imageHighThresholdPercent: 85, imageLowThresholdPercent: 80, imageMinimumGCAgeSeconds: 120, minContainerAgeSeconds: 0, maxDeadContainersPerPod: 1 });
    assert.equal(s.sandboxImage, 'registry.k8s.io/pause:3.10');
  });

  it('read every GC flag', () => {
    const argv = ['--cri-endpoint', 'x', '--image-gc-high-threshold', '100', '--image-gc-low-threshold', '0', '--image-minimum-gc-age', '0', '--minimum-container-ttl-duration', '60', '--maximum-dead-containers-per-container', '3', '--pod-infra-container-image', 'example.test/pause:1'];
    const s = parseSettings(argv, {});
    assert.ok(s !== 'help');
    assert.deepEqual(s.gc, { imageHighThresholdPercent: 100, imageLowThresholdPercent: 0, imageMinimumGCAgeSeconds: 0, minContainerAgeSeconds: 60, maxDeadContainersPerPod: 3 });
    assert.equal(s.sandboxImage, 'example.test/pause:1');
  });

  it('refuse a percentage above 100, a negative or fractional number, and a low threshold not below the high one', () => {
    for (const extra of [['--image-gc-high-threshold', '101'], ['--maximum-dead-containers-per-container', '-1'], ['--image-minimum-gc-age', '1.5'], ['--image-gc-low-threshold', '85']]) {
      assert.throws(() => parseSettings(['--cri-endpoint', 'x', ...extra], {}), (e: unknown) => e instanceof FlagError, extra.join(' '));
    }
  });
});
