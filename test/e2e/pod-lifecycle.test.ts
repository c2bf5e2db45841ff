/**
 * End to end: pods applied with kubectl run on the test cluster's node through nodelet, and their
 * state is asserted where users see it: the API (status, events) and the runtime (crictl).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import {
  NODE_IP,
  NODE_NAME,
  afterContainerGc,
  apply,
  busyboxPod,
  containerStatusOf,
  containersOf,
  crashedInstances,
  createNamespace,
  deleteNamespace,
  eventually,
  expectRuntime,
  getPod,
  kubectl,
  podEvents,
  podWithRuntime,
  requireCluster,
  runtimeContainers,
  runtimePicture,
  sandboxesOf,
  waitForPhase,
} from './helpers.js';

const POD_CIDR = /^10\.214\.0\.\d+$/;

describe('a busybox pod on the nodelet node', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-life');
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('registers the node Ready, with the runtime in its nodeInfo', async () => {
    const node = await eventually('node Ready', async () => {
      const n = JSON.parse(await kubectl(['get', 'node', NODE_NAME, '-o', 'json'])) as {
        status: { conditions: { type: string; status: string }[]; nodeInfo: { containerRuntimeVersion: string }; addresses: { type: string; address: string }[] };
      };
      return n.status.conditions.find((c) => c.type === 'Ready')?.status === 'True' ? n : undefined;
    });
    assert.match(node.status.nodeInfo.containerRuntimeVersion, /^containerd:\/\//);
    assert.ok(node.status.addresses.some((a) => a.type === 'InternalIP' && a.address === NODE_IP));
  });

  it('runs a pod bound with spec.nodeName: Running, a pod IP, ready containers, and its log on disk', async () => {
    await apply(busyboxPod({ name: 'bound', namespace, nodeName: NODE_NAME, script: 'echo hello-from-nodelet; sleep 3600' }));
    const pod = await eventually('bound pod ready', async () => {
      const p = await waitForPhase(namespace, 'bound', 'Running');
      return p.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? p : undefined;
    });
    assert.match(pod.status?.podIP ?? '', POD_CIDR);
    assert.equal(pod.status?.hostIP, NODE_IP);
    assert.equal(pod.status?.containerStatuses?.[0]?.ready, true);
    assert.match(pod.status?.containerStatuses?.[0]?.containerID ?? '', /^containerd:\/\/[0-9a-f]{64}$/);
    const uid = pod.metadata?.uid ?? '';
    const logPath = `/var/log/pods/${namespace}_bound_${uid}/main/0.log`;
    const log = await eventually('container log', async () => {
      const text = await readFile(logPath, 'utf8');
      return text.includes('hello-from-nodelet') ? text : undefined;
    });
    assert.match(log, /^\S+ stdout F hello-from-nodelet$/m);
    assert.deepEqual(await runtimePicture(uid), { sandboxes: ['sandbox#0:READY'], containers: ['main#0:RUNNING'] });
    assert.equal(`containerd://${(await runtimeContainers(uid))[0]?.id ?? ''}`, pod.status?.containerStatuses?.[0]?.containerID);
  });

  it('runs a pod placed by the scheduler', async () => {
    await apply(busyboxPod({ name: 'scheduled', namespace, script: 'sleep 3600' }));
    const pod = await waitForPhase(namespace, 'scheduled', 'Running');
    assert.equal(pod.spec?.nodeName, NODE_NAME);
    assert.match(pod.status?.podIP ?? '', POD_CIDR);
    const events = await podEvents(namespace, 'scheduled');
    const reasons = events.map((e) => e.reason);
    for (const reason of ['Scheduled', 'Pulled', 'Created', 'Started']) assert.ok(reasons.includes(reason), `event ${reason} in ${reasons.join(',')}`);
    assert.deepEqual(await runtimePicture(pod.metadata?.uid ?? ''), { sandboxes: ['sandbox#0:READY'], containers: ['main#0:RUNNING'] });
  });

  it('gives two pods different IPs that reach each other over the pod bridge', async () => {
    const server = await waitForPhase(namespace, 'bound', 'Running');
    await apply(busyboxPod({ name: 'client', namespace, nodeName: NODE_NAME, restartPolicy: 'Never', script: `ping -c 1 -W 5 ${server.status?.podIP ?? ''}` }));
    const client = await waitForPhase(namespace, 'client', 'Succeeded');
    assert.notEqual(client.status?.podIP, server.status?.podIP);
    assert.equal(client.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 0);
    await expectRuntime(client.metadata?.uid ?? '', { sandboxes: ['sandbox#0:NOTREADY'], containers: ['main#0:EXITED(0)'] });
  });

  it('deletes a pod: kubectl delete returns with nothing of the pod left in the runtime', async () => {
    const pod = await waitForPhase(namespace, 'bound', 'Running');
    const uid = pod.metadata?.uid ?? '';
    await kubectl(['delete', 'pod', '-n', namespace, 'bound', '--timeout=90s']);
    assert.equal(await getPod(namespace, 'bound'), undefined);
    assert.deepEqual(await sandboxesOf(uid), []);
    assert.deepEqual(await containersOf(uid), []);
    const reasons = (await podEvents(namespace, 'bound')).map((e) => e.reason);
    assert.ok(reasons.includes('Killing'), `Killing event in ${reasons.join(',')}`);
  });

  it('finishes a restartPolicy Never pod as Succeeded or Failed by its exit code', async () => {
    await apply(busyboxPod({ name: 'ok', namespace, nodeName: NODE_NAME, restartPolicy: 'Never', script: 'exit 0' }));
    await apply(busyboxPod({ name: 'bad', namespace, nodeName: NODE_NAME, restartPolicy: 'Never', script: 'exit 3' }));
    const ok = await waitForPhase(namespace, 'ok', 'Succeeded');
    const bad = await waitForPhase(namespace, 'bad', 'Failed');
    assert.equal(ok.status?.containerStatuses?.[0]?.state?.terminated?.reason, 'Completed');
    assert.equal(bad.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 3);
    assert.equal(bad.status?.containerStatuses?.[0]?.state?.terminated?.reason, 'Error');
    // A finished pod keeps its one sandbox, stopped, and its one container instance, never restarted.
    await expectRuntime(ok.metadata?.uid ?? '', { sandboxes: ['sandbox#0:NOTREADY'], containers: ['main#0:EXITED(0)'] });
    await expectRuntime(bad.metadata?.uid ?? '', { sandboxes: ['sandbox#0:NOTREADY'], containers: ['main#0:EXITED(3)'] });
  });

  it('restarts an exiting container under restartPolicy Always and counts the restarts', async () => {
    await apply(busyboxPod({ name: 'restarts', namespace, nodeName: NODE_NAME, script: 'echo run; exit 1' }));
    const pod = await eventually('a restart', async () => {
      const p = await getPod(namespace, 'restarts');
      return (p?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 ? p : undefined;
    });
    assert.equal(pod.status?.containerStatuses?.[0]?.lastState?.terminated?.exitCode, 1);
    // One sandbox; one instance per run the status counts, the newest maybe running. Container GC
    // (every minute, as the kubelet's) may already have removed all but the newest exited instance.
    const settled = await podWithRuntime([namespace, 'restarts'], { name: 'main' }, (p) => (containerStatusOf(p, 'main')?.restartCount ?? 0) >= 1);
    const expected = crashedInstances('main', containerStatusOf(settled.pod, 'main'), 1);
    assert.deepEqual({ ...settled.picture, containers: afterContainerGc(settled.picture.containers) }, { sandboxes: ['sandbox#0:READY'], containers: afterContainerGc(expected) });
    await kubectl(['delete', 'pod', '-n', namespace, 'restarts', '--timeout=90s']);
  });
});
