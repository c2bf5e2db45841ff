/**
 * The general predicates the kubelet runs again at admission, on plain data: effective requests
 * (init containers, sidecars, pod-level requests, overhead), resources fit with the kubelet's
 * reasons and messages, nodeSelector and required node affinity, NoExecute taints only, host-port
 * clashes, the OS label, and the order in which the first failure is chosen.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Container, V1Node, V1Pod } from '@kubernetes/client-node';
import { admitHandlers, admitPod, type AdmitResult } from './index.js';
import { APPARMOR_NOT_ENABLED } from './apparmor.js';
import { generalPredicateFailures } from './general-predicates.js';
import { matchesNodeSelectorAndAffinity } from './node-affinity.js';
import { hostPortsFree } from './node-ports.js';
import { podRequests } from './pod-requests.js';
import { insufficientResources } from './resources-fit.js';
import { tolerates, untoleratedNoExecuteTaint } from './taints.js';

type PodSpec = NonNullable<V1Pod['spec']>;

function pod(spec: Partial<PodSpec> = {}, name = 'web', labels?: Record<string, string>): V1Pod {
  return { metadata: { name, namespace: 'default', uid: `uid-${name}`, ...(labels === undefined ? {} : { labels }) }, spec: { containers: [{ name: 'app', image: 'busybox' }], ...spec } };
}

function asking(requests: Record<string, string>, name = 'web'): V1Pod {
  return pod({ containers: [{ name: 'app', image: 'busybox', resources: { requests } }] }, name);
}

function c(name: string, requests: Record<string, string>, restartPolicy?: string): V1Container {
  return { name, image: 'busybox', resources: { requests }, ...(restartPolicy === undefined ? {} : { restartPolicy }) };
}

const node: V1Node = {
  metadata: { name: 'node-a', labels: { 'kubernetes.io/os': 'linux', 'kubernetes.io/hostname': 'node-a', disk: 'ssd', cores: '8' } },
  spec: { taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] },
  status: { allocatable: { cpu: '2', memory: '4Gi', 'ephemeral-storage': '10Gi', pods: '3', 'example.com/gpu': '1' } },
};

describe('effective requests (the kubelet’s PodRequests)', () => {
  const plain = (r: Map<string, number>): Record<string, number> => Object.fromEntries([...r].sort());
  it('sums app containers, CPU in millicores, memory in bytes', () => {
    assert.deepEqual(plain(podRequests(pod({ containers: [c('a', { cpu: '250m', memory: '64Mi' }), c('b', { cpu: '0.5', memory: '1Gi' })] }))), { cpu: 750, memory: 64 * 2 ** 20 + 2 ** 30 });
  });
  it('takes the largest init container when it exceeds the app containers', () => {
    assert.deepEqual(plain(podRequests(pod({ initContainers: [c('i1', { cpu: '1' }), c('i2', { cpu: '1500m' })], containers: [c('a', { cpu: '500m' })] }))), { cpu: 1500 });
  });
  it('adds sidecars to the sum and to every later init step', () => {
    // sidecar 200m runs beside app 300m (500m); init after the sidecar: 1000m + 200m = 1200m.
    const p = pod({ initContainers: [c('side', { cpu: '200m' }, 'Always'), c('init', { cpu: '1' })], containers: [c('a', { cpu: '300m' })] });
    assert.deepEqual(plain(podRequests(p)), { cpu: 1200 });
    // An init container before the sidecar does not run beside it: max(1000, 500) = 1000.
    const before = pod({ initContainers: [c('init', { cpu: '1' }), c('side', { cpu: '200m' }, 'Always')], containers: [c('a', { cpu: '300m' })] });
    assert.deepEqual(plain(podRequests(before)), { cpu: 1000 });
  });
  it('uses pod-level CPU and memory requests and adds the overhead', () => {
    const p = pod({ containers: [c('a', { cpu: '100m', memory: '1Mi', 'ephemeral-storage': '1Gi' })], resources: { requests: { cpu: '1', memory: '2Mi' } }, overhead: { cpu: '50m', memory: '1Mi' } });
    assert.deepEqual(plain(podRequests(p)), { cpu: 1050, 'ephemeral-storage': 2 ** 30, memory: 3 * 2 ** 20 });
  });
});

describe('resources fit', () => {
  it('admits what fits beside the admitted pods and rejects the rest with the kubelet’s message', () => {
    const running = [asking({ cpu: '1500m', memory: '1Gi' }, 'a'), asking({ cpu: '400m' }, 'b')];
    assert.deepEqual(insufficientResources(asking({ cpu: '100m' }), node, running), []);
    assert.deepEqual(generalPredicateFailures(asking({ cpu: '500m' }), node, running)[0], {
      admit: false,
      reason: 'OutOfcpu',
      message: "Node didn't have enough resource: cpu, requested: 500, used: 1900, capacity: 2000",
    });
  });
  it('lists pods, cpu, memory, ephemeral-storage, then others, in that order', () => {
    const full = [asking({}, 'a'), asking({}, 'b'), asking({ 'example.com/gpu': '1' }, 'c')];
    const lacks = insufficientResources(asking({ cpu: '3', memory: '5Gi', 'ephemeral-storage': '11Gi', 'example.com/gpu': '1' }), node, full);
    assert.deepEqual(lacks.map((l) => [l.resourceName, l.requested, l.used, l.capacity]), [
      ['pods', 1, 3, 3],
      ['cpu', 3000, 0, 2000],
      ['memory', 5 * 2 ** 30, 0, 4 * 2 ** 30],
      ['ephemeral-storage', 11 * 2 ** 30, 0, 10 * 2 ** 30],
      ['example.com/gpu', 1, 1, 1],
    ]);
    assert.deepEqual(generalPredicateFailures(asking({}), node, full)[0], { admit: false, reason: 'OutOfpods', message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3" });
  });
  it('drops extended resources the node does not advertise, but not hugepages', () => {
    assert.deepEqual(insufficientResources(asking({ 'other.io/fpga': '4' }), node, []), []);
    assert.deepEqual(
      generalPredicateFailures(asking({ 'hugepages-2Mi': '2Mi' }), node, []).map((r) => r.reason),
      ['OutOfhugepages-2Mi'],
    );
  });
  it('a pod without requests needs only room for one more pod', () => {
    assert.deepEqual(insufficientResources(pod(), { ...node, status: { allocatable: { pods: '1' } } }, []), []);
  });
});

describe('nodeSelector and required node affinity', () => {
  const term = (key: string, operator: string, values?: string[]): PodSpec['affinity'] => ({
    nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key, operator, ...(values === undefined ? {} : { values }) }] }] } },
  });
  const cases: [string, Partial<PodSpec>, boolean][] = [
    ['no selector', {}, true],
    ['nodeSelector matching', { nodeSelector: { disk: 'ssd' } }, true],
    ['nodeSelector with a missing label', { nodeSelector: { disk: 'ssd', zone: 'a' } }, false],
    ['nodeSelector with another value', { nodeSelector: { disk: 'hdd' } }, false],
    ['In', { affinity: term('disk', 'In', ['hdd', 'ssd']) }, true],
    ['NotIn', { affinity: term('disk', 'NotIn', ['ssd']) }, false],
    ['NotIn on a missing label', { affinity: term('zone', 'NotIn', ['a']) }, true],
    ['Exists', { affinity: term('disk', 'Exists') }, true],
    ['DoesNotExist', { affinity: term('disk', 'DoesNotExist') }, false],
    ['Gt', { affinity: term('cores', 'Gt', ['4']) }, true],
    ['Lt', { affinity: term('cores', 'Lt', ['4']) }, false],
    ['Gt on a value that is not a number', { affinity: term('disk', 'Gt', ['1']) }, false],
    ['an empty term', { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{}] } } } }, false],
    ['terms are ORed', { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'Exists' }] }, { matchExpressions: [{ key: 'disk', operator: 'Exists' }] }] } } } }, true],
    ['matchFields on the node name', { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-b'] }] }] } } } }, false],
    ['selector and affinity are ANDed', { nodeSelector: { disk: 'hdd' }, affinity: term('disk', 'Exists') }, false],
    ['preferred terms do not count', { affinity: { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, preference: { matchExpressions: [{ key: 'zone', operator: 'Exists' }] } }] } } }, true],
  ];
  for (const [name, spec, expected] of cases) {
    it(name, () => {
      assert.equal(matchesNodeSelectorAndAffinity(pod(spec), node), expected);
    });
  }
  it('is reported as NodeAffinity with the kubelet’s message', () => {
    assert.deepEqual(generalPredicateFailures(pod({ nodeSelector: { disk: 'hdd' } }), node, []), [
      { admit: false, reason: 'NodeAffinity', message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector" },
    ]);
  });
});

describe('taints at admission: NoExecute only', () => {
  const tainted: V1Node = { ...node, spec: { taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }, { key: 'maintenance', value: 'now', effect: 'NoExecute' }] } };
  it('ignores NoSchedule and PreferNoSchedule taints (the scheduler’s)', () => {
    assert.equal(untoleratedNoExecuteTaint(pod(), node), undefined);
  });
  it('rejects an untolerated NoExecute taint as TaintToleration', () => {
    assert.equal(untoleratedNoExecuteTaint(pod(), tainted)?.key, 'maintenance');
    assert.deepEqual(generalPredicateFailures(pod(), tainted, []), [{ admit: false, reason: 'TaintToleration', message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate" }]);
  });
  it('admits a pod tolerating it', () => {
    for (const t of [{ key: 'maintenance', operator: 'Exists' }, { key: 'maintenance', value: 'now' }, { operator: 'Exists' }, { key: 'maintenance', operator: 'Equal', value: 'now', effect: 'NoExecute' }]) {
      assert.equal(untoleratedNoExecuteTaint(pod({ tolerations: [t] }), tainted), undefined, JSON.stringify(t));
    }
  });
  it('matches tolerations as the kubelet', () => {
    const taint = { key: 'k', value: 'v', effect: 'NoExecute' };
    assert.equal(tolerates({ key: 'k', value: 'other' }, taint), false);
    assert.equal(tolerates({ key: 'k', operator: 'Exists', effect: 'NoSchedule' }, taint), false);
    assert.equal(tolerates({ operator: 'Equal', value: 'v' }, taint), false, 'an empty key tolerates everything only with Exists');
  });
});

describe('host ports', () => {
  const withPort = (name: string, hostPort: number, extra: { hostIP?: string; protocol?: string } = {}): V1Pod =>
    pod({ containers: [{ name: 'app', image: 'busybox', ports: [{ containerPort: 80, hostPort, ...extra }] }] }, name);
  it('clashes on the same port and protocol with overlapping addresses', () => {
    assert.equal(hostPortsFree(withPort('b', 8080), [withPort('a', 8080)]), false);
    assert.equal(hostPortsFree(withPort('b', 8080, { hostIP: '127.0.0.1' }), [withPort('a', 8080)]), false, '0.0.0.0 covers every address');
    assert.equal(hostPortsFree(withPort('b', 8080, { hostIP: '10.0.0.1' }), [withPort('a', 8080, { hostIP: '10.0.0.2' })]), true);
    assert.equal(hostPortsFree(withPort('b', 8080, { protocol: 'UDP' }), [withPort('a', 8080)]), true);
    assert.equal(hostPortsFree(withPort('b', 8081), [withPort('a', 8080)]), true);
    assert.equal(hostPortsFree(pod({}, 'b'), [withPort('a', 8080)]), true);
  });
  it('is reported as NodePorts', () => {
    assert.deepEqual(generalPredicateFailures(withPort('b', 8080), node, [withPort('a', 8080)]), [
      { admit: false, reason: 'NodePorts', message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports" },
    ]);
  });
});

describe('the predicate handlers in the node’s list', () => {
  const handlers = admitHandlers({ allowedUnsafeSysctls: [], kernelVersion: '6.1', appArmor: { enabled: false, error: APPARMOR_NOT_ENABLED } });
  const admit = (p: V1Pod, others: V1Pod[] = []): AdmitResult => admitPod(handlers, { pod: p, node, otherPods: others });
  it('rejects a pod labelled for another OS (its label, not its nodeSelector)', () => {
    assert.deepEqual(admit(pod({}, 'w', { 'kubernetes.io/os': 'windows' })), {
      admit: false,
      reason: 'PodOSSelectorNodeLabelDoesNotMatch',
      message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
    });
    assert.deepEqual(admit(pod({}, 'l', { 'kubernetes.io/os': 'linux' })), { admit: true });
    const bySelector = admit(pod({ nodeSelector: { 'kubernetes.io/os': 'windows' } }));
    assert.equal(bySelector.admit ? '' : bySelector.reason, 'NodeAffinity');
  });
  it('reports the first failure: resources before affinity, the OS label before everything', () => {
    const both = admit(pod({ nodeSelector: { disk: 'hdd' }, containers: [c('a', { cpu: '3' })] }));
    assert.equal(both.admit ? '' : both.reason, 'OutOfcpu');
    const all = admit(pod({ nodeSelector: { disk: 'hdd' }, containers: [c('a', { cpu: '3' })] }, 'w', { 'kubernetes.io/os': 'windows' }));
    assert.equal(all.admit ? '' : all.reason, 'PodOSSelectorNodeLabelDoesNotMatch');
  });
  it('rejects a pod bound to another node by name', () => {
    const other = admit(pod({ nodeName: 'node-b' }));
    assert.equal(other.admit ? '' : other.message, "Predicate NodeName failed: node(s) didn't match the requested node name");
  });
});

describe('admission under node pressure (the eviction manager\'s admit handler)', () => {
  const withConditions = (...pressure: string[]): V1Node => ({
    metadata: { name: 'n' },
    status: { conditions: [{ type: 'Ready', status: 'True' }, ...['MemoryPressure', 'DiskPressure', 'PIDPressure'].map((type) => ({ type, status: pressure.includes(type) ? 'True' : 'False' }))] },
  });
  const bestEffort: V1Pod = { metadata: { name: 'be', uid: 'be' }, spec: { containers: [{ name: 'c' }] } };
  const burstable: V1Pod = { metadata: { name: 'bu', uid: 'bu' }, spec: { containers: [{ name: 'c', resources: { requests: { memory: '1Mi' } } }] } };
  const tolerant: V1Pod = { ...bestEffort, spec: { containers: [{ name: 'c' }], tolerations: [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' }] } };
  const critical: V1Pod = { ...bestEffort, spec: { containers: [{ name: 'c' }], priority: 2_000_000_000 } };
  const handler = admitHandlers({ allowedUnsafeSysctls: [], kernelVersion: '6.1', appArmor: { enabled: false, error: APPARMOR_NOT_ENABLED } })[0];
  const decide = (pod: V1Pod, node: V1Node): AdmitResult => handler?.admit({ pod, node, otherPods: [] }) ?? { admit: true };

  it('refuses BestEffort pods under MemoryPressure alone, unless they tolerate its taint', () => {
    assert.deepEqual(decide(bestEffort, withConditions('MemoryPressure')), { admit: false, reason: 'Evicted', message: 'The node had condition: [MemoryPressure]. ' });
    assert.deepEqual(decide(burstable, withConditions('MemoryPressure')), { admit: true });
    assert.deepEqual(decide(tolerant, withConditions('MemoryPressure')), { admit: true });
    assert.deepEqual(decide(bestEffort, withConditions()), { admit: true });
  });

  it('refuses every pod but critical ones under disk or PID pressure', () => {
    assert.deepEqual(decide(burstable, withConditions('MemoryPressure', 'DiskPressure')), { admit: false, reason: 'Evicted', message: 'The node had condition: [MemoryPressure DiskPressure]. ' });
    assert.deepEqual(decide(tolerant, withConditions('PIDPressure')), { admit: false, reason: 'Evicted', message: 'The node had condition: [PIDPressure]. ' });
    assert.deepEqual(decide(critical, withConditions('DiskPressure')), { admit: true });
  });
});
