/**
 * End to end: node admission as the kubelet's. Pods bound with `spec.nodeName` bypass the
 * scheduler, so only nodelet's admit handlers keep them off a node they do not fit: more CPU than
 * the node's allocatable (`OutOfcpu`), a nodeSelector the node lacks (`NodeAffinity`), a host port
 * an admitted pod holds (`NodePorts`). Each rejected pod is asserted from the API (phase Failed,
 * reason, message, one Warning event) and the runtime (crictl: no sandbox, no container); a pod
 * that fits (small request, a nodeSelector the node has) runs.
 *
 * NoExecute taints are covered by the component and unit tests only: tainting the one shared
 * node would reject every other suite's pods.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { parseMilliCpu } from '../../reconcilers/model/quantity.js';
import { NODE_NAME, apply, containersOf, createNamespace, deleteNamespace, eventually, getPod, kubectl, podEvents, requireCluster, sandboxesOf, waitForPhase } from './helpers.js';

function pod(namespace: string, name: string, spec: Record<string, unknown>, container: Record<string, unknown> = {}): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: { nodeName: NODE_NAME, restartPolicy: 'Never', terminationGracePeriodSeconds: 1, ...spec, containers: [{ name: 'main', image: 'busybox:1.35', command: ['sleep', '3600'], ...container }] },
  };
}

/** Waits for the pod to be Failed, then checks reason, message, the one Warning event and the empty runtime. */
async function assertRejected(namespace: string, name: string, reason: string, message: string | RegExp): Promise<V1Pod> {
  const failed = await eventually(`${name} Failed`, async () => {
    const p = await getPod(namespace, name);
    return p?.status?.phase === 'Failed' ? p : undefined;
  });
  assert.equal(failed.status?.reason, reason);
  const statusMessage = failed.status?.message ?? '';
  if (typeof message === 'string') assert.equal(statusMessage, `Pod was rejected: ${message}`);
  else assert.match(statusMessage, new RegExp(`^Pod was rejected: ${message.source}$`));
  const events = await eventually(`the ${reason} event of ${name}`, async () => {
    const found = (await podEvents(namespace, name)).filter((e) => e.reason === reason);
    return found.length > 0 ? found : undefined;
  });
  assert.equal(events.length, 1, 'one event');
  assert.equal(events[0]?.type, 'Warning');
  assert.equal(events[0]?.count ?? 1, 1, 'recorded once');
  assert.equal(`Pod was rejected: ${events[0]?.message ?? ''}`, statusMessage);
  const uid = failed.metadata?.uid ?? '';
  assert.deepEqual(await sandboxesOf(uid), [], 'no sandbox in the runtime');
  assert.deepEqual(await containersOf(uid), [], 'no container in the runtime');
  console.log(`${name}: ${reason}: ${statusMessage}`);
  return failed;
}

describe('node admission (pods bound by nodeName, bypassing the scheduler)', () => {
  let namespace = '';
  let allocatableMilliCpu = 0;

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-admit');
    const node = JSON.parse(await kubectl(['get', 'node', NODE_NAME, '-o', 'json'])) as V1Node;
    allocatableMilliCpu = parseMilliCpu(node.status?.allocatable?.cpu ?? '0');
    assert.ok(allocatableMilliCpu > 0, 'the node advertises allocatable CPU');
    console.log(`node ${NODE_NAME}: allocatable cpu ${allocatableMilliCpu}m`);
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('rejects a pod asking for more CPU than allocatable: Failed OutOfcpu', async () => {
    const requested = allocatableMilliCpu + 1000;
    await apply(pod(namespace, 'too-big', {}, { resources: { requests: { cpu: `${requested}m` } } }));
    await assertRejected(namespace, 'too-big', 'OutOfcpu', new RegExp(`Node didn't have enough resource: cpu, requested: ${requested}, used: \\d+, capacity: ${allocatableMilliCpu}`));
  });

  it('rejects a nodeSelector the node lacks: Failed NodeAffinity', async () => {
    await apply(pod(namespace, 'elsewhere', { nodeSelector: { 'nodelet.dev/e2e-absent': 'true' } }));
    await assertRejected(namespace, 'elsewhere', 'NodeAffinity', "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector");
  });

  it('rejects the second of two pods asking for the same host port: Failed NodePorts', async () => {
    const hostPort = 30000 + Math.floor(Math.random() * 2000);
    const ports = { ports: [{ containerPort: 8080, hostPort }] };
    await apply(pod(namespace, 'port-first', {}, ports));
    await waitForPhase(namespace, 'port-first', 'Running');
    await apply(pod(namespace, 'port-second', {}, ports));
    await assertRejected(namespace, 'port-second', 'NodePorts', "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports");
    const first = await getPod(namespace, 'port-first');
    assert.equal(first?.status?.phase, 'Running', 'the first pod keeps running');
    console.log(`host port ${hostPort}: port-first Running, port-second rejected`);
  });

  it('runs a pod that fits: a small request and a nodeSelector the node has', async () => {
    await apply(pod(namespace, 'fits', { nodeSelector: { 'kubernetes.io/hostname': NODE_NAME } }, { resources: { requests: { cpu: '10m', memory: '8Mi' } } }));
    const running = await waitForPhase(namespace, 'fits', 'Running');
    assert.equal((await sandboxesOf(running.metadata?.uid ?? '')).length, 1, 'one sandbox in the runtime');
    const admissionReasons = /^(OutOf.*|NodeAffinity|NodeName|NodePorts|TaintToleration|PodOSSelectorNodeLabelDoesNotMatch)$/;
    const rejections = (await podEvents(namespace, 'fits')).filter((e) => admissionReasons.test(e.reason ?? ''));
    assert.deepEqual(rejections.map((e) => e.reason), [], 'no admission event');
  });
});
