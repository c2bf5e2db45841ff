/**
 * Node admission (resources, node affinity, host ports, NoExecute taints) through the assembled
 * per-pod machinery and the recording fake runtime: a pod that does not fit ends Failed with the
 * kubelet's reason and message and one Warning event, and the runtime never got a RunPodSandbox
 * for it; pods are decided in creation order against the pods already admitted; a pod waits while
 * the Node object is unknown.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { createReconcilerHarness, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';
import { basePod } from '../../test/doubles/pod-fixtures.js';
import type { PodKey } from '../../util/pod-key.js';

let h: ReconcilerHarness | undefined;

afterEach(async () => {
  await h?.cleanup();
  h = undefined;
});

async function harness(): Promise<ReconcilerHarness> {
  h = await createReconcilerHarness();
  return h;
}

/** A pod of the harness's node (2 CPUs allocatable), created at `second`, with one container asking `cpu`. */
function pod(name: string, second: number, mutate?: (p: V1Pod) => void): { key: PodKey; pod: V1Pod } {
  const p = basePod((b) => {
    b.metadata = { name, namespace: 'default', uid: `uid-${name}`, creationTimestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, second)) };
    b.spec!.containers = [{ name: 'app', image: 'busybox:1.35', command: ['sleep', '3600'] }];
    mutate?.(b);
  });
  return { key: { uid: `uid-${name}`, namespace: 'default', name }, pod: p };
}

const cpu = (amount: string) => (p: V1Pod): void => {
  p.spec!.containers[0]!.resources = { requests: { cpu: amount } };
};

function sandboxesOf(t: ReconcilerHarness, uid: string): number {
  return t.runtime.callsTo('runPodSandbox').filter((c) => JSON.stringify(c.args[0]).includes(uid)).length;
}

function statusOf(t: ReconcilerHarness, uid: string): [string | undefined, string | undefined, string | undefined] {
  const s = t.store.get(uid)?.status;
  return [s?.phase, s?.reason, s?.message];
}

describe('node admission through the reconciler', () => {
  it('rejects a pod asking for more CPU than allocatable: Failed OutOfcpu, one Warning event, no sandbox', async () => {
    const t = await harness();
    const big = pod('big', 1, cpu('3'));
    t.store.set(big.key.uid, big.pod);
    assert.deepEqual(await t.reconciler().reconcile(big.key), {});
    await t.reconciler().reconcile(big.key);
    assert.equal(t.runtime.callsTo('runPodSandbox').length, 0);
    assert.equal(t.runtime.callsTo('pullImage').length + t.runtime.callsTo('createContainer').length, 0);
    assert.deepEqual(statusOf(t, big.key.uid), ['Failed', 'OutOfcpu', "Pod was rejected: Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000"]);
    assert.deepEqual(t.events.events.map((e) => [e.type, e.reason, e.message]), [['Warning', 'OutOfcpu', "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000"]]);
  });

  it('counts the pods already admitted, in creation order whichever reconciles first', async () => {
    const t = await harness();
    const first = pod('first', 1, cpu('1500m'));
    const second = pod('second', 2, cpu('1'));
    const third = pod('third', 3, cpu('500m'));
    for (const p of [first, second, third]) t.store.set(p.key.uid, p.pod);
    // The newest pod's reconcile runs first: the older ones are decided before it.
    await t.reconciler().reconcile(third.key);
    await t.reconciler().reconcile(second.key);
    await t.reconciler().reconcile(first.key);
    assert.equal(statusOf(t, first.key.uid)[0], 'Running');
    assert.deepEqual(statusOf(t, second.key.uid), ['Failed', 'OutOfcpu', "Pod was rejected: Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 2000"]);
    assert.equal(statusOf(t, third.key.uid)[0], 'Running', 'the rejected pod holds nothing: 1500m + 500m fit');
    assert.deepEqual([sandboxesOf(t, first.key.uid), sandboxesOf(t, second.key.uid), sandboxesOf(t, third.key.uid)], [1, 0, 1]);
    assert.deepEqual(t.events.events.filter((e) => e.type === 'Warning' && e.reason !== 'MissingClusterDNS').map((e) => [e.podUid, e.reason]), [['uid-second', 'OutOfcpu']]);
  });

  it('rejects a host-port clash with an admitted pod, and admits it once that pod is deleted and gone', async () => {
    const t = await harness();
    const port = (p: V1Pod): void => {
      p.spec!.containers[0]!.ports = [{ containerPort: 80, hostPort: 18080 }];
    };
    const a = pod('a', 1, port);
    const b = pod('b', 2, port);
    t.store.set(a.key.uid, a.pod);
    await t.reconciler().reconcile(a.key);
    t.store.set(b.key.uid, b.pod);
    await t.reconciler().reconcile(b.key);
    assert.deepEqual(statusOf(t, b.key.uid), ['Failed', 'NodePorts', "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"]);
    assert.equal(sandboxesOf(t, b.key.uid), 0);
    // a is deleted; a new pod c with the same port is admitted once a has terminated.
    t.store.set(a.key.uid, { ...t.store.get(a.key.uid)!, metadata: { ...a.pod.metadata, deletionTimestamp: new Date(t.clock.now()) } });
    await t.reconciler().reconcile(a.key);
    const c = pod('c', 3, port);
    t.store.set(c.key.uid, c.pod);
    await t.reconciler().reconcile(c.key);
    assert.equal(statusOf(t, c.key.uid)[0], 'Running');
    assert.equal(sandboxesOf(t, c.key.uid), 1);
  });

  it('rejects a nodeSelector the node lacks and an untolerated NoExecute taint, admits a NoSchedule one', async () => {
    const t = await harness();
    const node = t.nodeObject.value!;
    t.nodeObject.value = { ...node, spec: { taints: [{ key: 'maintenance', effect: 'NoExecute' }, { key: 'dedicated', effect: 'NoSchedule' }] } };
    const selector = pod('selector', 1, (p) => (p.spec!.nodeSelector = { disk: 'ssd' }));
    const untolerated = pod('untolerated', 2);
    const tolerated = pod('tolerated', 3, (p) => (p.spec!.tolerations = [{ key: 'maintenance', operator: 'Exists' }]));
    for (const p of [selector, untolerated, tolerated]) {
      t.store.set(p.key.uid, p.pod);
      await t.reconciler().reconcile(p.key);
    }
    assert.deepEqual(statusOf(t, selector.key.uid), ['Failed', 'NodeAffinity', "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"]);
    assert.deepEqual(statusOf(t, untolerated.key.uid), ['Failed', 'TaintToleration', "Pod was rejected: Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"]);
    assert.equal(statusOf(t, tolerated.key.uid)[0], 'Running');
    assert.deepEqual([sandboxesOf(t, selector.key.uid), sandboxesOf(t, untolerated.key.uid), sandboxesOf(t, tolerated.key.uid)], [0, 0, 1]);
  });

  it('waits, writing nothing, while the Node object is unknown', async () => {
    const t = await harness();
    const node = t.nodeObject.value;
    t.nodeObject.value = undefined;
    const p = pod('waiting', 1);
    t.store.set(p.key.uid, p.pod);
    assert.deepEqual(await t.reconciler().reconcile(p.key), { requeueAfterMs: 1000 });
    assert.equal(t.runtime.callsTo('runPodSandbox').length, 0);
    assert.equal(t.status.statuses.length, 0);
    t.nodeObject.value = node;
    await t.reconciler().reconcile(p.key);
    assert.equal(statusOf(t, p.key.uid)[0], 'Running');
  });
});
