/**
 * Fault: the API server is killed with SIGKILL and stays down for 60 s; `up.sh` starts it again.
 * During the outage the agent keeps its pods running from what it knows, does not crash, and a
 * container that exits is restarted per its restartPolicy; once the API is back, the statuses
 * catch up (the restart shows in the API's restartCount) and the node is Ready.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createNamespace, eventually, getPod, kubectl, requireCluster } from '../e2e/helpers.js';
import { sleeperPod } from './churn.js';
import { clusterUp, daemonPid, ensureClusterUp, isAlive, killDaemon, killProcess } from './harness.js';
import { inventoryMatches, namespaceInventoryProblems, type PodInventory } from './census.js';
import { containerPid, deleteNamespaceAndWait, listPods, nodeReadyStatus, runningContainers, runtimeContainers, runtimeOfNamespace, type RunningContainer, type RuntimeContainer } from './state.js';

const OUTAGE_MS = 60_000;
/** What each pod has in the runtime once the API is back: every sandbox and container, any state. */
const SETTLED: Readonly<Record<string, PodInventory>> = {
  steady: { sandbox: 'SANDBOX_READY', containers: { main: ['CONTAINER_RUNNING'] } },
  exiter: { sandbox: 'SANDBOX_READY', containers: { main: ['CONTAINER_EXITED', 'CONTAINER_RUNNING'] } },
};

describe('the API server down for 60 s', () => {
  let namespace = '';
  let agentPid = 0;
  const recorded = new Map<string, RunningContainer>();
  /** The runtime's containers of the namespace at the end of the outage, before the API came back. */
  let atOutageEnd: RuntimeContainer[] = [];
  let agentAliveAtOutageEnd = false;

  before(async () => {
    requireCluster();
    await ensureClusterUp();
    agentPid = (await daemonPid('nodelet')) ?? 0;
    assert.ok(agentPid > 0, 'the agent runs');
    namespace = await createNamespace('faults-api');
    const items = [sleeperPod(namespace, 'steady'), sleeperPod(namespace, 'exiter')];
    await kubectl(['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
    const running = await eventually('both pods to run', async () => {
      const containers = runningContainers(await listPods(namespace));
      return containers.length === items.length ? containers : undefined;
    }, 120_000);
    for (const c of running) recorded.set(c.podName, c);
    const exiterPid = await containerPid(recorded.get('exiter')!.containerId);

    const downAt = Date.now();
    await killDaemon('kube-apiserver');
    await new Promise((resolve) => setTimeout(resolve, 5000));
    await killProcess(exiterPid, 'SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, downAt + OUTAGE_MS - Date.now())));
    atOutageEnd = await runtimeContainers(namespace);
    agentAliveAtOutageEnd = await isAlive(agentPid);
    await clusterUp();
  });

  after(async () => {
    await ensureClusterUp();
    if (namespace !== '') await deleteNamespaceAndWait(namespace);
  });

  it('keeps the untouched container running through the outage, with the same ID', async () => {
    const was = recorded.get('steady')!;
    assert.equal(atOutageEnd.find((c) => c.id === was.containerId)?.state, 'CONTAINER_RUNNING');
    const pod = await getPod(namespace, 'steady');
    assert.equal(pod?.status?.containerStatuses?.[0]?.containerID, `containerd://${was.containerId}`);
    assert.equal(pod?.status?.containerStatuses?.[0]?.restartCount, 0);
  });

  it('keeps the agent process alive through the outage and after', async () => {
    assert.ok(agentAliveAtOutageEnd, `agent pid ${agentPid} was alive at the end of the outage`);
    assert.equal(await daemonPid('nodelet'), agentPid);
  });

  it('restarts the container that exited during the outage without the API', () => {
    const was = recorded.get('exiter')!;
    const mine = atOutageEnd.filter((c) => c.uid === was.uid);
    assert.equal(mine.find((c) => c.id === was.containerId)?.state, 'CONTAINER_EXITED');
    assert.equal(mine.filter((c) => c.state === 'CONTAINER_RUNNING' && c.attempt === 1).length, 1, `runtime shows ${JSON.stringify(mine)}`);
  });

  it('catches the exited container up in the API once it is back: restartCount 1, last exit 137', async () => {
    const was = recorded.get('exiter')!;
    const pod = await eventually('the restart to show in the API', async () => {
      const p = await getPod(namespace, 'exiter');
      const status = p?.status?.containerStatuses?.[0];
      return (status?.restartCount ?? 0) >= 1 && status?.state?.running !== undefined ? p : undefined;
    }, 120_000);
    const status = pod.status?.containerStatuses?.[0];
    assert.equal(status?.restartCount, 1);
    assert.equal(status?.lastState?.terminated?.exitCode, 137);
    assert.notEqual(status?.containerID, `containerd://${was.containerId}`);
  });

  it('counts everything: one ready sandbox per pod in any state, exactly the containers expected, nothing orphaned', async () => {
    await eventually('both pods to settle', inventoryMatches(namespace, SETTLED), 60_000);
    assert.deepEqual(await namespaceInventoryProblems(namespace, SETTLED), []);
    const runtime = await runtimeOfNamespace(namespace);
    for (const [name, was] of recorded) {
      assert.equal(runtime.containers.find((c) => c.uid === was.uid && c.attempt === 0)?.id, was.containerId, `${name}: its first container is the one recorded before the outage`);
    }
  });

  it('reports the node Ready again', async () => {
    await eventually('the node to be Ready', async () => ((await nodeReadyStatus()) === 'True' ? true : undefined), 120_000);
  });
});
