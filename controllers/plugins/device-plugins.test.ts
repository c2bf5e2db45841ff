/**
 * The device plugin path over real gRPC on unix sockets in a temporary directory: a test device
 * plugin registers on the registration server's kubelet.sock, its ListAndWatch feeds the device
 * manager, a container's allocation goes through its Allocate, health changes reach allocatable,
 * and a restarted registration server (an agent restart) is registered with again.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import { systemClock } from '../../util/clock.js';
import { DeviceManager } from '../../reconcilers/devices/device-manager.js';
import { TestDevicePlugin } from '../../test/doubles/test-device-plugin.js';
import { DevicePluginRegistry, registrationRefusal } from './device-plugin-registry.js';
import { allocationCodec } from './proto.js';
import { until } from '../../test/doubles/until.js';

const R = 'example.com/resource';
const root = mkdtempSync(path.join(tmpdir(), 'nodelet-dp-'));
after(() => { rmSync(root, { recursive: true, force: true }); });
const logger = pino({ level: 'silent' });

function setup(name: string): { dir: string; devices: DeviceManager; registry: DevicePluginRegistry } {
  const dir = path.join(root, name);
  const devices = new DeviceManager({ checkpointFile: path.join(dir, 'kubelet_internal_checkpoint'), codec: allocationCodec, clock: systemClock, logger });
  return { dir, devices, registry: new DevicePluginRegistry({ dir, sink: devices, logger }) };
}

const pod: V1Pod = { metadata: { uid: 'p1', name: 'p1', namespace: 'default' }, spec: { containers: [{ name: 'app', image: 'busybox', resources: { limits: { [R]: '1' } } }] } };

describe('device plugin registration and allocation over gRPC', () => {
  it('registers a plugin, follows its ListAndWatch and health, allocates through Allocate and PreStartContainer', async () => {
    const { dir, devices, registry } = setup('register');
    await devices.start();
    await registry.start();
    const plugin = new TestDevicePlugin({ socketPath: path.join(dir, 'dp.sock'), resourceName: R, devices: [{ id: 'Dev-1', health: 'Healthy' }, { id: 'Dev-2', health: 'Healthy' }], preStartRequired: true, preferred: (available) => available.filter((id) => id === 'Dev-2') });
    await plugin.start();
    try {
      await plugin.register(registry.socketPath, 'dp.sock');
      await until('two devices', () => devices.extendedResources().allocatable[R] === 2);
      const options = await devices.runOptions(pod, pod.spec!.containers[0]!);
      assert.deepEqual(plugin.calledWith('Allocate'), [{ containerRequests: [{ devicesIds: ['Dev-2'] }] }]);
      assert.deepEqual(plugin.calledWith('PreStartContainer'), [{ devicesIds: ['Dev-2'] }]);
      assert.equal(plugin.calledWith('GetPreferredAllocation').length, 1);
      assert.deepEqual(options?.envs, [{ key: 'TEST_DEVICES', value: 'Dev-2' }]);
      assert.deepEqual(options?.mounts, [{ containerPath: '/dev-files/Dev-2', hostPath: '/tmp/Dev-2', readOnly: true }]);
      assert.deepEqual(options?.devices, [{ containerPath: '/dev/Dev-2', hostPath: '/dev/null', permissions: 'rw' }]);
      assert.deepEqual(options?.cdiDevices, [`${R}=Dev-2`]);
      assert.deepEqual(options?.annotations, { 'example.com/devices': 'Dev-2' });
      // An unhealthy device leaves allocatable, not capacity.
      plugin.setDevices([{ id: 'Dev-1', health: 'Unhealthy' }, { id: 'Dev-2', health: 'Healthy' }]);
      await until('one healthy device', () => devices.extendedResources().allocatable[R] === 1);
      assert.equal(devices.extendedResources().capacity[R], 2);
      // The plugin goes: its devices are unhealthy at once.
      await plugin.stop();
      await until('allocatable 0', () => devices.extendedResources().allocatable[R] === 0);
      await devices.flushed();
    } finally {
      await plugin.stop();
      await registry.stop();
    }
  });

  it("refuses a registration with an unsupported version or an invalid resource name, in the kubelet's words", async () => {
    const { dir, devices, registry } = setup('refuse');
    await devices.start();
    await registry.start();
    const plugin = new TestDevicePlugin({ socketPath: path.join(dir, 'dp.sock'), resourceName: 'cpu', devices: [] });
    await plugin.start();
    try {
      await assert.rejects(plugin.register(registry.socketPath, 'dp.sock'), /the ResourceName "cpu" is invalid/);
      await assert.rejects(new TestDevicePlugin({ socketPath: '', resourceName: R, devices: [] }).register(registry.socketPath, 'dp.sock', 'v1alpha'), /requested API version "v1alpha" is not supported by kubelet\. Supported version is \["v1beta1"\]/);
      assert.equal(registrationRefusal(['v1beta1'], 'kubernetes.io/x'), 'the ResourceName "kubernetes.io/x" is invalid');
      assert.equal(devices.isDeviceResource('cpu'), false);
    } finally {
      await plugin.stop();
      await registry.stop();
    }
  });

  it('recreates kubelet.sock at start, removing stale sockets but not the checkpoint; a plugin registers again and keeps its allocations', async () => {
    const { dir, devices, registry } = setup('restart');
    await devices.start();
    await registry.start();
    const plugin = new TestDevicePlugin({ socketPath: path.join(dir, 'dp.sock'), resourceName: R, devices: [{ id: 'Dev-1', health: 'Healthy' }] });
    await plugin.start();
    try {
      await plugin.register(registry.socketPath, 'dp.sock');
      await until('a device', () => devices.extendedResources().allocatable[R] === 1);
      await devices.runOptions(pod, pod.spec!.containers[0]!);
      await devices.flushed();
      await registry.stop();
      await plugin.stop();
      // A new agent: manager from the checkpoint, a registry that cleans the directory.
      writeFileSync(path.join(dir, 'not-a-socket'), '');
      const again = setup('restart');
      await again.devices.start();
      assert.deepEqual([...(again.devices.podDevices('p1').get(R) ?? [])], ['Dev-1']);
      await again.registry.start();
      assert.equal(existsSync(path.join(dir, 'dp.sock')), false, 'the stale plugin socket is removed');
      assert.equal(existsSync(path.join(dir, 'kubelet_internal_checkpoint')), true);
      assert.equal(existsSync(path.join(dir, 'not-a-socket')), true);
      const back = new TestDevicePlugin({ socketPath: path.join(dir, 'dp2.sock'), resourceName: R, devices: [{ id: 'Dev-1', health: 'Healthy' }] });
      await back.start();
      await back.register(again.registry.socketPath, 'dp2.sock');
      await until('the device again', () => again.devices.extendedResources().capacity[R] === 1);
      const options = await again.devices.runOptions(pod, pod.spec!.containers[0]!);
      assert.deepEqual(options?.envs, [{ key: 'TEST_DEVICES', value: 'Dev-1' }], 'the answer kept in the checkpoint');
      assert.deepEqual(back.calledWith('Allocate'), [], 'no second Allocate for the same container');
      await back.stop();
      await again.registry.stop();
    } finally {
      await plugin.stop();
    }
  });
});
