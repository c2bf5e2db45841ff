import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1NodeStatus } from '@kubernetes/client-node';
import type { HostFacts } from './host-info.js';
import { buildNodeStatus, bytesToKi, decimalQuantity, formatRuntimeVersion, readyConditionOf, type NodeReadiness } from './node-status.js';

const facts: HostFacts = {
  cpuCount: 2,
  memoryBytes: 25_276_026_880,
  ephemeralStorageBytes: 66_053_021 * 4096,
  machineId: '3d1219c7c4c5404aaa1f6d2a48adfda4',
  systemUuid: '3d1219c7c4c5404aaa1f6d2a48adfda4',
  bootId: 'e9380cdd-c5c4-49ae-a2bf-52e9f3583cc3',
  kernelVersion: '6.1.0-18-amd64',
  osImage: 'Debian GNU/Linux 12 (bookworm)',
  architecture: 'amd64',
  hostname: 'vm',
  runningInUserNamespace: false,
};
const ready: NodeReadiness = { ready: true, reason: '', message: '' };
const notReady: NodeReadiness = {
  ready: false,
  reason: 'NetworkPluginNotReady',
  message: 'cni plugin not initialized',
};
const t0 = new Date('2030-01-01T00:00:00Z');
const t1 = new Date('2030-01-01T00:00:10.750Z');
const t1Seconds = new Date('2030-01-01T00:00:10Z');

function build(readiness: NodeReadiness, now: Date, previous?: V1NodeStatus): V1NodeStatus {
  return buildNodeStatus(facts, {
    runtimeVersion: 'containerd://1.6.20~ds1',
    agentVersion: 'v0.1.0-nodelet',
    nodeIp: '10.254.0.2',
    readiness,
    now,
    previous,
  });
}

function conditionMap(status: V1NodeStatus): Map<string, { status: string; reason?: string; transition?: number; heartbeat?: number }> {
  return new Map(
    (status.conditions ?? []).map((c) => [
      c.type,
      {
        status: c.status,
        reason: c.reason,
        transition: c.lastTransitionTime?.getTime(),
        heartbeat: c.lastHeartbeatTime?.getTime(),
      },
    ]),
  );
}

describe('decimalQuantity', () => {
  it('writes whole bytes as the canonical DecimalSI quantity the kubelet reports', () => {
    assert.deepEqual([0, 999, 1000, 1500, 64_000, 10_000_000_000, 270553174016].map(decimalQuantity), ['0', '999', '1k', '1500', '64k', '10G', '270553174016']);
  });
});

describe('buildNodeStatus', () => {
  it('reports capacity and allocatable in Kubernetes quantities with 110 pods by default', () => {
    const status = build(ready, t0);
    const expected = { cpu: '2', memory: '24683620Ki', 'ephemeral-storage': '270553174016', pods: '110' };
    assert.deepEqual(status.capacity, expected);
    assert.deepEqual(status.allocatable, expected);
  });

  it('honours a configured max pods', () => {
    const status = buildNodeStatus(facts, {
      runtimeVersion: undefined,
      agentVersion: 'v0.1.0-nodelet',
      nodeIp: '10.254.0.2',
      readiness: ready,
      maxPods: 17,
      now: t0,
    });
    assert.equal(status.capacity?.pods, '17');
  });

  it('reports the internal IP and host name, nodeInfo and the kubelet endpoint port', () => {
    const status = build(ready, t0);
    assert.deepEqual(status.addresses, [
      { type: 'InternalIP', address: '10.254.0.2' },
      { type: 'Hostname', address: 'vm' },
    ]);
    assert.deepEqual(status.nodeInfo, {
      machineID: facts.machineId,
      systemUUID: facts.systemUuid,
      bootID: facts.bootId,
      kernelVersion: '6.1.0-18-amd64',
      osImage: 'Debian GNU/Linux 12 (bookworm)',
      containerRuntimeVersion: 'containerd://1.6.20~ds1',
      kubeletVersion: 'v0.1.0-nodelet',
      kubeProxyVersion: '',
      operatingSystem: 'linux',
      architecture: 'amd64',
      runningInUserNamespace: false,
    });
    assert.deepEqual(status.daemonEndpoints, { kubeletEndpoint: { Port: 10250 } });
    // What the scheduler's NodeDeclaredFeatures filter matches pods with a RestartAllContainers rule against.
    assert.deepEqual(status.declaredFeatures, ['RestartAllContainersOnContainerExits']);
  });

  it('keeps the previously reported runtime version when the runtime cannot say', () => {
    const previous = build(ready, t0);
    const status = buildNodeStatus(facts, {
      runtimeVersion: undefined,
      agentVersion: 'v0.1.0-nodelet',
      nodeIp: '10.254.0.2',
      readiness: ready,
      now: t1,
      previous,
    });
    assert.equal(status.nodeInfo?.containerRuntimeVersion, 'containerd://1.6.20~ds1');
  });

  const transitions: {
    name: string;
    before: NodeReadiness | undefined;
    after: NodeReadiness;
    readyStatus: string;
    readyReason: string;
    readyTransition: Date;
  }[] = [
    { name: 'first post, ready', before: undefined, after: ready, readyStatus: 'True', readyReason: 'KubeletReady', readyTransition: t1Seconds },
    { name: 'ready stays ready', before: ready, after: ready, readyStatus: 'True', readyReason: 'KubeletReady', readyTransition: t0 },
    { name: 'ready becomes not ready', before: ready, after: notReady, readyStatus: 'False', readyReason: 'KubeletNotReady', readyTransition: t1Seconds },
    { name: 'not ready stays not ready', before: notReady, after: notReady, readyStatus: 'False', readyReason: 'KubeletNotReady', readyTransition: t0 },
    { name: 'not ready becomes ready', before: notReady, after: ready, readyStatus: 'True', readyReason: 'KubeletReady', readyTransition: t1Seconds },
  ];
  for (const tc of transitions) {
    it(`sets Ready and its transition time correctly when ${tc.name}`, () => {
      const previous = tc.before ? build(tc.before, t0) : undefined;
      const conditions = conditionMap(build(tc.after, t1, previous));
      const readyCondition = conditions.get('Ready');
      assert.ok(readyCondition);
      assert.equal(readyCondition.status, tc.readyStatus);
      assert.equal(readyCondition.reason, tc.readyReason);
      assert.equal(readyCondition.transition, tc.readyTransition.getTime());
      assert.equal(readyCondition.heartbeat, t1Seconds.getTime(), 'heartbeat is always now');
    });
  }

  it('keeps pressure conditions False with their transition time across heartbeats', () => {
    const conditions = conditionMap(build(notReady, t1, build(ready, t0)));
    assert.deepEqual(
      [...conditions.entries()].filter(([type]) => type !== 'Ready'),
      [
        ['MemoryPressure', { status: 'False', reason: 'KubeletHasSufficientMemory', transition: t0.getTime(), heartbeat: t1Seconds.getTime() }],
        ['DiskPressure', { status: 'False', reason: 'KubeletHasNoDiskPressure', transition: t0.getTime(), heartbeat: t1Seconds.getTime() }],
        ['PIDPressure', { status: 'False', reason: 'KubeletHasSufficientPID', transition: t0.getTime(), heartbeat: t1Seconds.getTime() }],
      ],
    );
  });

  it('reports the eviction manager\'s pressure as True conditions in the kubelet\'s words, moving their transition times', () => {
    const before = build(ready, t0);
    const status = buildNodeStatus(facts, { runtimeVersion: 'containerd://1.6.20~ds1', agentVersion: 'v0.1.0-nodelet', nodeIp: '10.254.0.2', readiness: ready, now: t1, previous: before, pressure: ['MemoryPressure', 'PIDPressure'] });
    const conditions = conditionMap(status);
    assert.deepEqual(conditions.get('MemoryPressure'), { status: 'True', reason: 'KubeletHasInsufficientMemory', transition: t1Seconds.getTime(), heartbeat: t1Seconds.getTime() });
    assert.deepEqual(conditions.get('DiskPressure'), { status: 'False', reason: 'KubeletHasNoDiskPressure', transition: t0.getTime(), heartbeat: t1Seconds.getTime() });
    assert.deepEqual(conditions.get('PIDPressure'), { status: 'True', reason: 'KubeletHasInsufficientPID', transition: t1Seconds.getTime(), heartbeat: t1Seconds.getTime() });
  });

  it('holds back the hard eviction thresholds from allocatable memory and ephemeral storage', () => {
    const status = buildNodeStatus(facts, { runtimeVersion: undefined, agentVersion: 'v', nodeIp: '10.254.0.2', readiness: ready, now: t0, reserved: { memoryBytes: 100 * 1024 * 1024, ephemeralStorageBytes: 1024 * 1024 * 1024 } });
    assert.deepEqual(status.capacity, { cpu: '2', memory: '24683620Ki', 'ephemeral-storage': '270553174016', pods: '110' });
    assert.deepEqual(status.allocatable, { cpu: '2', memory: `${24683620 - 102400}Ki`, 'ephemeral-storage': String(270553174016 - 1024 ** 3), pods: '110' });
  });

  it("bumps Ready's transition time when the server holds Unknown (node lifecycle controller took over)", () => {
    const previous = build(ready, t0);
    const unknown = { ...previous, conditions: previous.conditions?.map((c) => (c.type === 'Ready' ? { ...c, status: 'Unknown' } : c)) };
    const readyCondition = readyConditionOf(build(ready, t1, unknown));
    assert.ok(readyCondition);
    assert.equal(readyCondition.status, 'True');
    assert.equal(readyCondition.lastTransitionTime?.getTime(), t1Seconds.getTime());
  });

  it("puts the runtime's reason and message in the NotReady message", () => {
    const readyCondition = readyConditionOf(build(notReady, t0));
    assert.equal(readyCondition?.message, 'NetworkPluginNotReady: cni plugin not initialized');
    const bare = readyConditionOf(build({ ready: false, reason: '', message: '' }, t0));
    assert.equal(bare?.message, 'container runtime is not ready');
  });
});

describe('buildNodeStatus: device plugin resources', () => {
  it("adds each plugin resource to capacity (every device) and allocatable (healthy ones), a removed one as 0", () => {
    const status = buildNodeStatus(facts, {
      runtimeVersion: 'containerd://2.4.2',
      agentVersion: 'v0.1.0-nodelet',
      nodeIp: '10.254.0.2',
      readiness: ready,
      now: t0,
      extendedResources: { capacity: { 'example.com/resource': 2, 'example.com/gone': 0 }, allocatable: { 'example.com/resource': 1, 'example.com/gone': 0 } },
    });
    assert.equal(status.capacity?.['example.com/resource'], '2');
    assert.equal(status.allocatable?.['example.com/resource'], '1');
    assert.equal(status.capacity?.['example.com/gone'], '0');
    assert.equal(status.allocatable?.['example.com/gone'], '0');
    assert.equal(status.capacity?.pods, '110');
  });
});

describe('quantity and version formatting', () => {
  it('rounds bytes down to whole Ki', () => {
    assert.equal(bytesToKi(1024), '1Ki');
    assert.equal(bytesToKi(2047), '1Ki');
    assert.equal(bytesToKi(0), '0Ki');
  });

  it('prefixes the runtime version with its name as a URL scheme', () => {
    // As the kubelet's nodeInfo (util/version's String of ParseSemantic, else ParseGeneric).
    assert.equal(formatRuntimeVersion({ runtimeName: 'containerd', runtimeVersion: '1.6.20~ds1' }), 'containerd://1.6.20');
    assert.equal(formatRuntimeVersion({ runtimeName: 'containerd', runtimeVersion: 'v2.4.2' }), 'containerd://2.4.2');
    assert.equal(formatRuntimeVersion({ runtimeName: 'containerd', runtimeVersion: '2.1.0-rc.1+abc' }), 'containerd://2.1.0-rc.1+abc');
    assert.equal(formatRuntimeVersion({ runtimeName: 'cri-o', runtimeVersion: '1.31' }), 'cri-o://1.31');
    assert.equal(formatRuntimeVersion({ runtimeName: 'x', runtimeVersion: 'devel' }), 'x://devel');
  });
});

describe("the Node's runtime handlers and features", () => {
  it("writes each handler the runtime lists with its features, and the runtime-wide supplementalGroupsPolicy, as the kubelet's setters", () => {
    const status = buildNodeStatus(facts, {
      runtimeVersion: 'containerd://v2.4.2',
      agentVersion: 'v0.1.0-nodelet',
      nodeIp: '10.254.0.2',
      readiness: ready,
      now: t0,
      runtimeFeatures: {
        handlers: [{ name: '', recursiveReadOnlyMounts: true, userNamespaces: true }, { name: 'gvisor', recursiveReadOnlyMounts: false, userNamespaces: false }],
        features: { supplementalGroupsPolicy: true, userNamespacesHostNetwork: false, mountOptions: false },
      },
    });
    assert.deepEqual(status.runtimeHandlers, [
      { name: '', features: { recursiveReadOnlyMounts: true, userNamespaces: true } },
      { name: 'gvisor', features: { recursiveReadOnlyMounts: false, userNamespaces: false } },
    ]);
    assert.deepEqual(status.features, { supplementalGroupsPolicy: true });
  });

  it('writes neither before the runtime answered a Status', () => {
    const status = build(ready, t0);
    assert.equal(status.runtimeHandlers, undefined);
    assert.equal(status.features, undefined);
  });
});
