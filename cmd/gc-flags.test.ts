import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FlagError, parseSettings } from './flags.js';

describe('GC flags', () => {
  it("default to the kubelet's policy and sandbox image", () => {
    const s = parseSettings(['--cri-endpoint', 'x'], {});
    assert.ok(s !== 'help');
    assert.deepEqual(s.gc, { imageHighThresholdPercent: 85, imageLowThresholdPercent: 80, imageMinimumGCAgeSeconds: 120, imageMaximumGCAgeSeconds: 0, minContainerAgeSeconds: 0, maxDeadContainersPerPod: 1, maxDeadContainers: -1 });
    assert.equal(s.sandboxImage, 'registry.k8s.io/pause:3.10');
  });

  it('read every GC flag', () => {
    const argv = ['--cri-endpoint', 'x', '--image-gc-high-threshold', '100', '--image-gc-low-threshold', '0', '--image-minimum-gc-age', '0', '--minimum-container-ttl-duration', '60', '--maximum-dead-containers-per-container', '3', '--maximum-dead-containers', '240', '--image-maximum-gc-age', '168h', '--pod-infra-container-image', 'example.test/pause:1'];
    const s = parseSettings(argv, {});
    assert.ok(s !== 'help');
    assert.deepEqual(s.gc, { imageHighThresholdPercent: 100, imageLowThresholdPercent: 0, imageMinimumGCAgeSeconds: 0, imageMaximumGCAgeSeconds: 604800, minContainerAgeSeconds: 60, maxDeadContainersPerPod: 3, maxDeadContainers: 240 });
    assert.equal(s.sandboxImage, 'example.test/pause:1');
  });

  it('take --maximum-dead-containers as the kubelet: any negative value is no limit', () => {
    for (const [raw, limit] of [['-1', -1], ['-5', -1], ['0', 0], ['2147483647', 2147483647]] as const) {
      const s = parseSettings(['--cri-endpoint', 'x', `--maximum-dead-containers=${raw}`], {});
      assert.ok(s !== 'help');
      assert.equal(s.gc.maxDeadContainers, limit, raw);
    }
    const spaced = parseSettings(['--cri-endpoint', 'x', '--maximum-dead-containers', '-1'], {});
    assert.ok(spaced !== 'help');
    assert.equal(spaced.gc.maxDeadContainers, -1);
  });

  it('refuse a percentage above 100, a negative or fractional number, a low threshold not below the high one, and a maximum image age not above the minimum', () => {
    const refused = [
      ['--image-gc-high-threshold', '101'], ['--maximum-dead-containers-per-container', '-1'], ['--image-minimum-gc-age', '1.5'], ['--image-gc-low-threshold', '85'],
      ['--maximum-dead-containers', '1.5'], ['--maximum-dead-containers', '2147483648'], ['--image-maximum-gc-age', '-1m'], ['--image-maximum-gc-age', '2m'], ['--image-maximum-gc-age', '60'],
    ];
    for (const extra of refused) {
      assert.throws(() => parseSettings(['--cri-endpoint', 'x', ...extra], {}), (e: unknown) => e instanceof FlagError, extra.join(' '));
    }
  });
});
