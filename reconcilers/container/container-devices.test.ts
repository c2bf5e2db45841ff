import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { buildContainerConfig, type ContainerConfigOptions } from './container-config.js';
import { DEFAULT_MASKED_PATHS } from './security-context.js';

const pod: V1Pod = { metadata: { name: 'p', namespace: 'default', uid: 'u' }, spec: { containers: [{ name: 'app', image: 'busybox', command: ['echo', '$(DEVICES)'] }] } };

const base: ContainerConfigOptions = {
  pod,
  container: pod.spec!.containers[0]!,
  kind: 'regular',
  nodeName: 'n',
  restartCount: 0,
  imageRef: 'busybox',
  env: [{ key: 'OWN', value: '1' }],
  mounts: [{ containerPath: '/data', hostPath: '/var/lib/nodelet/pods/u/volumes/x' }],
  security: { seccompProfileRoot: '/s', seccompDefault: false, maskedPaths: DEFAULT_MASKED_PATHS },
  imageUser: { uid: 0n },
  memoryCapacityBytes: 1 << 30,
};

describe('container config with device plugin allocations', () => {
  it("puts the devices' envs and mounts before the container's own, their device nodes, CDI devices and annotations in the CRI config", () => {
    const config = buildContainerConfig({
      ...base,
      devices: {
        envs: [{ key: 'DEVICES', value: 'Dev-1' }],
        mounts: [{ containerPath: '/tmp/Dev-1', hostPath: '/tmp/Dev-1', readOnly: true }],
        devices: [{ containerPath: '/dev/x', hostPath: '/dev/null', permissions: 'rw' }],
        annotations: { 'example.com/devices': 'Dev-1' },
        cdiDevices: ['example.com/resource=CDI-Dev-1'],
      },
    });
    assert.deepEqual(config.envs, [{ key: 'DEVICES', value: 'Dev-1' }, { key: 'OWN', value: '1' }]);
    assert.deepEqual(config.mounts.map((m) => [m.containerPath, m.readonly]), [['/tmp/Dev-1', true], ['/data', undefined]]);
    assert.deepEqual(config.devices, [{ containerPath: '/dev/x', hostPath: '/dev/null', permissions: 'rw' }]);
    assert.deepEqual(config.cdiDevices, ['example.com/resource=CDI-Dev-1']);
    assert.equal(config.annotations['example.com/devices'], 'Dev-1');
    // A device env expands in the command, as the kubelet's opts.Envs.
    assert.deepEqual(config.command, ['echo', 'Dev-1']);
  });

  it('adds nothing without allocations', () => {
    const config = buildContainerConfig(base);
    assert.equal(config.devices, undefined);
    assert.equal(config.cdiDevices, undefined);
    assert.deepEqual(config.envs, [{ key: 'OWN', value: '1' }]);
  });
});
