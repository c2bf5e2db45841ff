import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { allocationCodec } from '../../controllers/plugins/proto.js';
import { DeviceManager, ENDPOINT_STOP_GRACE_MS } from './device-manager.js';
import { isDeviceAllocationError } from './allocation.js';
import { EMPTY_ALLOCATION, type ContainerAllocation, type DevicePluginEndpoint, type DevicePluginOptions } from './types.js';

const R = 'example.com/resource';
const root = mkdtempSync(path.join(tmpdir(), 'nodelet-devmgr-'));
after(() => { rmSync(root, { recursive: true, force: true }); });
let n = 0;

/** A recording endpoint: Allocate answers an env naming the devices. */
class FakeEndpoint implements DevicePluginEndpoint {
  readonly socketPath = '/fake.sock';
  readonly allocated: string[][] = [];
  readonly preStarted: string[][] = [];
  preferred: string[] = [];
  async preferredAllocation(): Promise<string[]> {
    await Promise.resolve();
    return this.preferred;
  }
  async allocate(deviceIds: readonly string[]): Promise<ContainerAllocation> {
    await new Promise((resolve) => setImmediate(resolve));
    this.allocated.push([...deviceIds]);
    return { ...EMPTY_ALLOCATION, envs: { DEVICES: deviceIds.join(',') }, cdiDevices: deviceIds.map((id) => `${R}=${id}`) };
  }
  async preStartContainer(deviceIds: readonly string[]): Promise<void> {
    await Promise.resolve();
    this.preStarted.push([...deviceIds]);
  }
}

const OPTIONS: DevicePluginOptions = { preStartRequired: false, getPreferredAllocationAvailable: false };

function manager(file = path.join(root, `cp-${n++}`)): { devices: DeviceManager; clock: ReturnType<typeof createFakeClock>; file: string } {
  const clock = createFakeClock();
  return { devices: new DeviceManager({ checkpointFile: file, codec: allocationCodec, clock, logger: pino({ level: 'silent' }) }), clock, file };
}

function healthy(...ids: string[]): { id: string; health: 'Healthy'; numaNodes: number[] }[] {
  return ids.map((id) => ({ id, health: 'Healthy' as const, numaNodes: [] }));
}

const wants = (name: string, count: number, extra: Partial<V1Container> = {}): V1Container => ({ name, image: 'busybox', resources: { limits: { [R]: String(count) } }, ...extra });

function pod(uid: string, containers: V1Container[], initContainers: V1Container[] = []): V1Pod {
  return { metadata: { uid, name: uid, namespace: 'default' }, spec: { containers, initContainers } };
}

describe('DeviceManager', () => {
  it("allocates a pod's devices before its first container starts, and gives the container the plugin's answer", async () => {
    const { devices } = manager();
    await devices.start();
    const endpoint = new FakeEndpoint();
    devices.pluginConnected(R, endpoint, OPTIONS);
    devices.devicesChanged(R, healthy('d1', 'd2'));
    const p = pod('p1', [wants('app', 1)]);
    const options = await devices.runOptions(p, p.spec!.containers[0]!);
    assert.deepEqual(endpoint.allocated, [['d1']]);
    assert.deepEqual(options?.envs, [{ key: 'DEVICES', value: 'd1' }]);
    assert.deepEqual(options?.cdiDevices, [`${R}=d1`]);
    // A restart of the container gets the same devices without another Allocate.
    await devices.runOptions(p, p.spec!.containers[0]!);
    assert.equal(endpoint.allocated.length, 1);
  });

  it("reuses a finished init container's devices for the containers after it, as the kubelet", async () => {
    const { devices } = manager();
    await devices.start();
    const endpoint = new FakeEndpoint();
    devices.pluginConnected(R, endpoint, OPTIONS);
    devices.devicesChanged(R, healthy('d1', 'd2'));
    const p = pod('p1', [wants('app', 1)], [wants('init', 2)]);
    await devices.runOptions(p, p.spec!.initContainers![0]!);
    assert.deepEqual(endpoint.allocated, [['d1', 'd2'], ['d1']]);
  });

  it('never gives one device to two pods allocating at once', async () => {
    const { devices } = manager();
    await devices.start();
    devices.pluginConnected(R, new FakeEndpoint(), OPTIONS);
    devices.devicesChanged(R, healthy('d1', 'd2'));
    const a = pod('a', [wants('app', 1)]);
    const b = pod('b', [wants('app', 1)]);
    const [oa, ob] = await Promise.all([devices.runOptions(a, a.spec!.containers[0]!), devices.runOptions(b, b.spec!.containers[0]!)]);
    assert.notDeepEqual(oa?.envs, ob?.envs);
    const c = pod('c', [wants('app', 1)]);
    await assert.rejects(devices.runOptions(c, c.spec!.containers[0]!), (e: unknown) => isDeviceAllocationError(e) && e.message === `requested number of devices unavailable for ${R}. Requested: 1, Available: 0`);
  });

  it("asks the plugin's preference when it offers one, and PreStartContainer before each start when it asks", async () => {
    const { devices } = manager();
    await devices.start();
    const endpoint = new FakeEndpoint();
    endpoint.preferred = ['d3'];
    devices.pluginConnected(R, endpoint, { preStartRequired: true, getPreferredAllocationAvailable: true });
    devices.devicesChanged(R, healthy('d1', 'd2', 'd3'));
    const p = pod('p1', [wants('app', 1)]);
    await devices.runOptions(p, p.spec!.containers[0]!);
    await devices.runOptions(p, p.spec!.containers[0]!);
    assert.deepEqual(endpoint.allocated, [['d3']]);
    assert.deepEqual(endpoint.preStarted, [['d3'], ['d3']]);
  });

  it('keeps allocations across a restart through its checkpoint: the same devices, never given to another pod', async () => {
    const first = manager();
    await first.devices.start();
    first.devices.pluginConnected(R, new FakeEndpoint(), OPTIONS);
    first.devices.devicesChanged(R, healthy('d1', 'd2'));
    const p = pod('p1', [wants('app', 1)]);
    await first.devices.runOptions(p, p.spec!.containers[0]!);
    await first.devices.flushed();

    const second = manager(first.file);
    await second.devices.start();
    // Known from the checkpoint with no device until its plugin registers again.
    assert.deepEqual(second.devices.extendedResources(), { capacity: { [R]: 0 }, allocatable: { [R]: 0 } });
    const endpoint = new FakeEndpoint();
    second.devices.pluginConnected(R, endpoint, OPTIONS);
    second.devices.devicesChanged(R, healthy('d1', 'd2'));
    assert.deepEqual([...(second.devices.podDevices('p1').get(R) ?? [])], ['d1']);
    const again = await second.devices.runOptions(p, p.spec!.containers[0]!);
    assert.deepEqual(again?.envs, [{ key: 'DEVICES', value: 'd1' }]);
    const q = pod('q', [wants('app', 1)]);
    await second.devices.runOptions(q, q.spec!.containers[0]!);
    assert.deepEqual(endpoint.allocated, [['d2']]);
  });

  it('frees the devices of a terminated pod, and of pods no source has once the sources synced', async () => {
    const { devices } = manager();
    await devices.start();
    devices.pluginConnected(R, new FakeEndpoint(), OPTIONS);
    devices.devicesChanged(R, healthy('d1', 'd2'));
    const a = pod('a', [wants('app', 1)]);
    const b = pod('b', [wants('app', 1)]);
    await devices.runOptions(a, a.spec!.containers[0]!);
    await devices.runOptions(b, b.spec!.containers[0]!);
    devices.podTerminated({ uid: 'a', namespace: 'default', name: 'a' });
    assert.equal(devices.podDevices('a').size, 0);
    devices.useActivePods(() => new Set(['c']));
    const c = pod('c', [wants('app', 2)]);
    await devices.runOptions(c, c.spec!.containers[0]!);
    assert.equal(devices.podDevices('b').size, 0);
    assert.equal(devices.podDevices('c').get(R)?.size, 2);
  });

  it('reports capacity and allocatable: unhealthy devices leave allocatable; a plugin gone drops it to 0, then the resource to 0 after the grace', async () => {
    const { devices, clock } = manager();
    await devices.start();
    const endpoint = new FakeEndpoint();
    devices.pluginConnected(R, endpoint, OPTIONS);
    devices.devicesChanged(R, [...healthy('d1'), { id: 'd2', health: 'Unhealthy', numaNodes: [] }]);
    assert.deepEqual(devices.extendedResources(), { capacity: { [R]: 2 }, allocatable: { [R]: 1 } });
    devices.pluginDisconnected(R, endpoint);
    assert.deepEqual(devices.extendedResources(), { capacity: { [R]: 2 }, allocatable: { [R]: 0 } });
    await clock.advance(ENDPOINT_STOP_GRACE_MS);
    assert.deepEqual(devices.extendedResources(), { capacity: { [R]: 0 }, allocatable: { [R]: 0 } });
    assert.equal(devices.isDeviceResource(R), false);
    // A plugin that registers again brings it back.
    devices.pluginConnected(R, endpoint, OPTIONS);
    devices.devicesChanged(R, healthy('d1'));
    assert.deepEqual(devices.extendedResources(), { capacity: { [R]: 1 }, allocatable: { [R]: 1 } });
  });

  it('ignores the disconnection of a plugin another one replaced', async () => {
    const { devices } = manager();
    await devices.start();
    const old = new FakeEndpoint();
    devices.pluginConnected(R, old, OPTIONS);
    devices.pluginConnected(R, new FakeEndpoint(), OPTIONS);
    devices.devicesChanged(R, healthy('d1'));
    devices.pluginDisconnected(R, old);
    assert.deepEqual(devices.extendedResources().allocatable, { [R]: 1 });
  });

  it("refuses a container's start when the resource has no healthy device or no plugin", async () => {
    const { devices } = manager();
    await devices.start();
    const endpoint = new FakeEndpoint();
    devices.pluginConnected(R, endpoint, OPTIONS);
    devices.devicesChanged(R, [{ id: 'd1', health: 'Unhealthy', numaNodes: [] }]);
    const p = pod('p1', [wants('app', 1)]);
    await assert.rejects(devices.runOptions(p, p.spec!.containers[0]!), (e: unknown) => isDeviceAllocationError(e) && e.message === `no healthy devices present; cannot allocate unhealthy devices ${R}`);
  });
});
