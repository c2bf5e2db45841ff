import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { unusedKubeClient } from '../../test/doubles/kube-client.js';
import { pino } from 'pino';
import { createFakeClock, settle } from '../../test/doubles/fake-clock.js';
import { apiError, createFakeLeaseApi, createFakeNodeApi } from '../../test/doubles/fake-kube-api.js';
import type { HostFacts } from './host-info.js';
import { NODE_LEASE_NAMESPACE } from './lease.js';
import { createNodeController, isForbiddenNodeLabelError, type NodeRuntime } from './node-controller.js';
import type { NodeReadiness } from './node-status.js';
import { allocatableEnforcedEvent, cgroupV1Event } from './node-events.js';
import type { NodeEvent } from '../../reconcilers/events/node-event.js';

const facts: HostFacts = {
  cpuCount: 4,
  memoryBytes: 8 * 1024 ** 3,
  ephemeralStorageBytes: 100 * 1024 ** 3,
  machineId: 'm',
  systemUuid: 'm',
  bootId: 'b',
  kernelVersion: '6.1.0',
  osImage: 'Debian GNU/Linux 12 (bookworm)',
  architecture: 'amd64',
  hostname: 'host-a',
  runningInUserNamespace: false,
};

function setup(options: { labels?: Record<string, string>; annotations?: Record<string, string>; events?: string[]; startupEvents?: () => readonly NodeEvent[]; startup?: string[]; random?: () => number } = {}) {
  const clock = createFakeClock(Date.parse('2030-01-01T00:00:00Z'));
  const nodeApi = createFakeNodeApi();
  const leaseApi = createFakeLeaseApi();
  let readiness: NodeReadiness = { ready: true, reason: '', message: '' };
  let runtimeUp = true;
  const runtime: NodeRuntime = {
    version: () =>
      runtimeUp ? Promise.resolve({ runtimeName: 'containerd', runtimeVersion: '1.6.20~ds1' }) : Promise.reject(new Error('down')),
    readiness: () => (runtimeUp ? Promise.resolve(readiness) : Promise.reject(new Error('down'))),
  };
  const controller = createNodeController({
    kube: unusedKubeClient(),
    nodeName: 'worker-1',
    nodeIp: '10.254.0.2',
    hostInfo: { read: () => Promise.resolve(facts) },
    runtime,
    logger: pino({ level: 'silent' }),
    clock,
    labels: options.labels,
    ...(options.annotations === undefined ? {} : { annotations: options.annotations }),
    taints: [{ key: 'nodelet.dev/agent', value: 'true', effect: 'NoSchedule' }],
    agentVersion: 'v0.1.0-nodelet',
    nodeApi,
    leaseApi,
    // 0 unless a test says otherwise: the periods are exact.
    random: options.random ?? (() => 0),
    ...(options.events === undefined ? {} : { events: { recordNode: (node: { name: string; uid: string }, e: { reason: string }) => options.events?.push(`${node.name}/${node.uid} ${e.reason}`) } }),
    ...(options.startupEvents === undefined ? {} : { startupEvents: options.startupEvents }),
    ...(options.startup === undefined ? {} : { startup: { registrationAttempted: () => options.startup?.push('attempt'), registeredNewNode: () => options.startup?.push('created'), nodeReady: () => options.startup?.push('ready') } }),
  });
  return {
    clock,
    nodeApi,
    leaseApi,
    controller,
    setReadiness: (next: NodeReadiness) => (readiness = next),
    setRuntimeUp: (up: boolean) => (runtimeUp = up),
  };
}

function readyOf(nodeApi: ReturnType<typeof createFakeNodeApi>) {
  return nodeApi.nodes.get('worker-1')?.status?.conditions?.find((c) => c.type === 'Ready');
}

describe('node controller', () => {
  it('tells the startup tracker of the registration attempt, the Node created and each status that reached the API Ready', async () => {
    const startup: string[] = [];
    const { controller, setReadiness } = setup({ startup });
    setReadiness({ ready: false, reason: 'KubeletNotReady', message: 'runtime not ready' });
    controller.start();
    await settle();
    assert.deepEqual(startup, ['attempt', 'created'], 'not Ready yet');
    setReadiness({ ready: true, reason: '', message: '' });
    await controller.refreshNow();
    assert.deepEqual(startup, ['attempt', 'created', 'ready']);
    await controller.stop();
  });

  it('registers the node with its labels and taints, posts Ready status and creates its lease', async () => {
    const { controller, nodeApi, leaseApi } = setup({ labels: { 'nodelet.dev/pool': 'a' } });
    controller.start();
    await settle();
    const node = nodeApi.nodes.get('worker-1');
    assert.deepEqual(node?.metadata?.labels, {
      'nodelet.dev/pool': 'a',
      'kubernetes.io/hostname': 'worker-1',
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': 'amd64',
    });
    assert.deepEqual(node.spec?.taints, [{ key: 'nodelet.dev/agent', value: 'true', effect: 'NoSchedule' }]);
    assert.equal(readyOf(nodeApi)?.status, 'True');
    assert.equal(node.status?.nodeInfo?.containerRuntimeVersion, 'containerd://1.6.20');
    const lease = leaseApi.leases.get(`${NODE_LEASE_NAMESPACE}/worker-1`);
    assert.equal(lease?.spec?.holderIdentity, 'worker-1');
    assert.equal(controller.healthy(), true);
    await controller.stop();
  });

  it('adopts an existing node, fixing only the labels it owns and keeping labels others set', async () => {
    const { controller, nodeApi } = setup();
    nodeApi.nodes.set('worker-1', {
      metadata: { name: 'worker-1', uid: 'old-uid', labels: { 'kubernetes.io/arch': 'arm64', team: 'blue' } },
      spec: {},
    });
    controller.start();
    await settle();
    assert.deepEqual(nodeApi.nodes.get('worker-1')?.metadata?.labels, {
      'kubernetes.io/arch': 'amd64',
      team: 'blue',
      'kubernetes.io/hostname': 'worker-1',
      'kubernetes.io/os': 'linux',
    });
    assert.deepEqual(nodeApi.calls.slice(0, 3), ['createNode', 'readNode', 'patchNode']);
    await controller.stop();
  });

  it('registers its own annotations, and brings them up to date on an existing node, keeping others', async () => {
    const created = setup({ annotations: { 'nodelet.dev/redis-password-sha256': 'aa' } });
    created.controller.start();
    await settle();
    assert.deepEqual(created.nodeApi.nodes.get('worker-1')?.metadata?.annotations, { 'nodelet.dev/redis-password-sha256': 'aa' });
    await created.controller.stop();
    const adopted = setup({ annotations: { 'nodelet.dev/redis-password-sha256': 'bb' } });
    adopted.nodeApi.nodes.set('worker-1', { metadata: { name: 'worker-1', uid: 'old-uid', labels: {}, annotations: { 'nodelet.dev/redis-password-sha256': 'aa', other: 'kept' } }, spec: {} });
    adopted.controller.start();
    await settle();
    assert.deepEqual(adopted.nodeApi.nodes.get('worker-1')?.metadata?.annotations, { 'nodelet.dev/redis-password-sha256': 'bb', other: 'kept' });
    await adopted.controller.stop();
  });

  it('heartbeats status and lease every 10 s', async () => {
    const { controller, nodeApi, leaseApi, clock } = setup();
    controller.start();
    await settle();
    await clock.advance(30_000);
    assert.equal(nodeApi.calls.filter((c) => c === 'patchNodeStatus').length, 4);
    assert.equal(leaseApi.calls.filter((c) => c === 'replaceNamespacedLease').length, 3);
    const heartbeat = readyOf(nodeApi)?.lastHeartbeatTime;
    assert.equal(heartbeat?.getTime(), clock.now());
    await controller.stop();
  });

  it("jitters both heartbeats' periods by up to 4%, as the kubelet's wait.JitterUntil(…, 0.04)", async () => {
    const { controller, nodeApi, leaseApi, clock } = setup({ random: () => 0.5 });
    controller.start();
    await settle();
    const posts = (): number => nodeApi.calls.filter((c) => c === 'patchNodeStatus').length;
    const renewals = (): number => leaseApi.calls.filter((c) => c === 'replaceNamespacedLease').length;
    const [firstPosts, firstRenewals] = [posts(), renewals()];
    await clock.advance(10_199);
    assert.deepEqual([posts(), renewals()], [firstPosts, firstRenewals], 'not at 10 s: 10 s × (1 + 0.5 × 0.04) = 10.2 s');
    await clock.advance(1);
    assert.deepEqual([posts(), renewals()], [firstPosts + 1, firstRenewals + 1]);
    await controller.stop();
  });

  it("records the Node's events once each: Starting and the conditions after the first post, NodeNotReady on the change", async () => {
    const events: string[] = [];
    const { controller, clock, setReadiness } = setup({ events });
    controller.start();
    await settle();
    const uid = events[0]?.split(' ')[0] ?? '';
    assert.match(uid, /^worker-1\/.+/, 'the Node with the UID the API server gave it');
    assert.deepEqual(events.map((e) => e.split(' ')[1]), ['Starting', 'NodeHasSufficientMemory', 'NodeHasNoDiskPressure', 'NodeHasSufficientPID']);
    await clock.advance(10_000);
    await settle();
    assert.equal(events.length, 4, 'a heartbeat that changes nothing records nothing');
    setReadiness({ ready: false, reason: 'NetworkPluginNotReady', message: 'cni plugin not initialized' });
    await controller.refreshNow();
    assert.deepEqual(events.slice(4), [`${uid} NodeNotReady`]);
    await controller.stop();
  });

  it("records the start-up events after Starting, once (the kubelet's CgroupV1 warning, NodeAllocatableEnforced)", async () => {
    const events: string[] = [];
    let asked = 0;
    const { controller, clock } = setup({ events, startupEvents: () => { asked++; return [cgroupV1Event(), allocatableEnforcedEvent()]; } });
    controller.start();
    await settle();
    assert.deepEqual(events.map((e) => e.split(' ')[1]).slice(0, 3), ['Starting', 'CgroupV1', 'NodeAllocatableEnforced']);
    await clock.advance(10_000);
    await settle();
    assert.equal(asked, 1);
    assert.equal(events.filter((e) => e.endsWith(' CgroupV1')).length, 1);
    await controller.stop();
  });

  it('posts Ready=False with the runtime reason at once on refreshNow, and a new transition time', async () => {
    const { controller, nodeApi, clock, setReadiness } = setup();
    controller.start();
    await settle();
    const readySince = readyOf(nodeApi)?.lastTransitionTime?.getTime();
    await clock.advance(3000);
    setReadiness({ ready: false, reason: 'NetworkPluginNotReady', message: 'cni plugin not initialized' });
    assert.equal(await controller.refreshNow(), true);
    const ready = readyOf(nodeApi);
    assert.equal(ready?.status, 'False');
    assert.equal(ready.reason, 'KubeletNotReady');
    assert.equal(ready.message, 'NetworkPluginNotReady: cni plugin not initialized');
    assert.equal(ready.lastTransitionTime?.getTime(), clock.now());
    assert.notEqual(ready.lastTransitionTime.getTime(), readySince);
    await controller.stop();
  });

  it('advertises a new max-pods at once when it changes, and posts nothing when it does not', async () => {
    const { controller, nodeApi } = setup();
    controller.start();
    await settle();
    assert.equal(nodeApi.nodes.get('worker-1')?.status?.capacity?.pods, '110');
    const posts = (): number => nodeApi.calls.filter((c) => c === 'patchNodeStatus').length;
    const before = posts();
    controller.setMaxPods(110);
    await settle();
    assert.equal(posts(), before);
    controller.setMaxPods(20);
    await settle();
    assert.equal(posts(), before + 1);
    assert.equal(nodeApi.nodes.get('worker-1')?.status?.capacity?.pods, '20');
    assert.equal(nodeApi.nodes.get('worker-1')?.status?.allocatable?.pods, '20');
    await controller.stop();
  });

  it('reports NotReady while the runtime does not answer, keeping the last runtime version', async () => {
    const { controller, nodeApi, setRuntimeUp } = setup();
    controller.start();
    await settle();
    setRuntimeUp(false);
    await controller.refreshNow();
    assert.equal(readyOf(nodeApi)?.status, 'False');
    assert.equal(nodeApi.nodes.get('worker-1')?.status?.nodeInfo?.containerRuntimeVersion, 'containerd://1.6.20');
    await controller.stop();
  });

  it('keeps retrying registration with backoff while the API server fails, then registers', async () => {
    const { controller, nodeApi, clock } = setup();
    const down = () => apiError(503, 'ServiceUnavailable');
    nodeApi.failNext('createNode', down(), down(), down());
    controller.start();
    await settle();
    assert.equal(controller.healthy(), false);
    assert.equal(nodeApi.nodes.size, 0);
    await clock.advance(500 + 1000 + 2000);
    assert.equal(nodeApi.calls.filter((c) => c === 'createNode').length, 4);
    assert.ok(nodeApi.nodes.has('worker-1'));
    await controller.stop();
  });

  it('registers again when its Node was deleted', async () => {
    const { controller, nodeApi, clock } = setup();
    controller.start();
    await settle();
    nodeApi.nodes.delete('worker-1');
    await clock.advance(10_000);
    assert.equal(nodeApi.nodes.has('worker-1'), false, 'the failed patch reveals the deletion');
    await clock.advance(500);
    assert.equal(readyOf(nodeApi)?.status, 'True');
    await controller.stop();
  });

  it('becomes unhealthy when the lease cannot be renewed for longer than its duration', async () => {
    const { controller, leaseApi, clock } = setup();
    controller.start();
    await settle();
    assert.equal(controller.healthy(), true);
    leaseApi.failNext('replaceNamespacedLease', ...Array.from({ length: 20 }, () => apiError(500, 'InternalError')));
    leaseApi.failNext('readNamespacedLease', ...Array.from({ length: 20 }, () => apiError(500, 'InternalError')));
    await clock.advance(45_000);
    assert.equal(controller.healthy(), false);
    await controller.stop();
  });

  it('refuses labels NodeRestriction would never let the node set', () => {
    assert.throws(() => setup({ labels: { 'node-role.kubernetes.io/worker': '' } }), isForbiddenNodeLabelError);
  });
});
