/**
 * Fault: the agent is stopped and started again (an upgrade, a rollout) while its pods run and
 * their statuses are up to date in the API. As the kubelet's status manager, the new agent writes
 * no status the API server already holds: it reconciles every pod, and compares what it would
 * write with the API's copy in the form the API server sends it back (no nulls, no empty maps).
 * Before f184bd0 every pod's status was written again after each restart: this test against the
 * agent of 4ef7a70 printed "100 before the restart, 104 after" for its 4 pods, a cost that grows
 * with every pod of every node at each rollout.
 *
 * Counted on the API server (`apiserver_request_total` of pods/status PATCH and PUT, every client),
 * with every pod of the cluster being this test's, and in the runtime (the same containers, still
 * running). The run of each pod by the new agent is read from the queue's completed jobs.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { Redis } from 'ioredis';
import { reconcileQueueName } from '../../controllers/queue/redis.js';
import { NODE_NAME, apply, createNamespace, crictl, eventually, kubectl, requireCluster } from '../e2e/helpers.js';
import { clusterUp, daemonPid, ensureClusterUp, stopHarnessAgent } from './harness.js';
import { deleteNamespaceAndWait } from './state.js';

const SLEEPERS = ['plain-a', 'plain-b', 'probed'] as const;
const DONE = 'done';

function pod(namespace: string, name: string): object {
  const probed = name === 'probed';
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { app: 'restart-status' } },
    spec: {
      nodeName: NODE_NAME,
      terminationGracePeriodSeconds: 1,
      restartPolicy: name === DONE ? 'Never' : 'Always',
      containers: [{
        name: 'app',
        image: 'docker.io/library/busybox:1.35',
        imagePullPolicy: 'IfNotPresent',
        command: ['sh', '-c', name === DONE ? 'exit 0' : 'touch /tmp/ready; exec sleep 3600'],
        ...(probed ? { readinessProbe: { exec: { command: ['cat', '/tmp/ready'] }, periodSeconds: 1 } } : {}),
      }],
    },
  };
}

async function allPods(): Promise<V1Pod[]> {
  return (JSON.parse(await kubectl(['get', 'pods', '-A', '-o', 'json'])) as { items: V1Pod[] }).items;
}

function settled(p: V1Pod): boolean {
  if (p.metadata?.name === DONE) return p.status?.phase === 'Succeeded';
  const ready = p.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  return p.status?.phase === 'Running' && ready;
}

/** Status writes to pods the API server has served so far, from every client. */
async function podStatusWrites(): Promise<number> {
  const metrics = await kubectl(['get', '--raw', '/metrics']);
  let total = 0;
  for (const line of metrics.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    if (!line.includes('resource="pods"') || !line.includes('subresource="status"')) continue;
    if (!/verb="(PATCH|UPDATE|APPLY)"/.test(line)) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/** The UIDs with a reconcile job that completed after `sinceMs`, from the queue's history. */
async function reconciledSince(redis: Redis, sinceMs: number): Promise<Set<string>> {
  const ids = await redis.zrangebyscore(`nodelet:${reconcileQueueName(NODE_NAME)}:completed`, sinceMs, '+inf');
  return new Set(ids.map((id) => id.slice(0, id.indexOf('.'))));
}

/** The IDs of the pod's containers, running or not, as the status names them. */
function containerIds(p: V1Pod): string[] {
  return (p.status?.containerStatuses ?? []).map((s) => (s.containerID ?? '').replace('containerd://', ''));
}

describe('pod statuses across an agent restart', () => {
  let namespace = '';
  let redis: Redis | undefined;

  before(async () => {
    requireCluster();
    await ensureClusterUp();
    namespace = await createNamespace('faults-status');
    redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:16379', { lazyConnect: true, maxRetriesPerRequest: 3 });
    await redis.connect();
  });

  after(async () => {
    redis?.disconnect();
    await ensureClusterUp();
    if (namespace !== '') await deleteNamespaceAndWait(namespace);
  });

  it('writes no status the API already holds after a restart, though it reconciles every pod again', async (t) => {
    for (const name of [...SLEEPERS, DONE]) await apply(pod(namespace, name));
    const names = [...SLEEPERS, DONE];
    await eventually('every pod Running and Ready, or Succeeded', async () => {
      const mine = (await allPods()).filter((p) => p.metadata?.namespace === namespace);
      return mine.length === names.length && mine.every(settled) ? true : undefined;
    }, 90_000);
    // Steady: no status write for 3 s in a row (the last writes of the start are done).
    let before = await podStatusWrites();
    await eventually('no pod status written for 3 s', async () => {
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const now = await podStatusWrites();
      const steady = now === before;
      before = now;
      return steady ? true : undefined;
    }, 60_000);
    const pods = await allPods();
    assert.deepEqual(pods.map((p) => p.metadata?.namespace).filter((ns) => ns !== namespace), [], 'no other pod in the cluster whose status could be written meanwhile');
    const uids = new Set(pods.map((p) => p.metadata?.uid ?? ''));
    const containersBefore = new Map(pods.map((p) => [p.metadata?.name ?? '', containerIds(p)]));

    // As the kubelet, a restarted agent keeps a container Ready only if it started more than 10 s
    // before the agent did; a younger one is probed again (a real change, written twice).
    const latestStart = Math.max(...pods.flatMap((p) => (p.status?.containerStatuses ?? []).map((c) => Date.parse(String(c.state?.running?.startedAt ?? c.state?.terminated?.startedAt ?? '')))));
    assert.ok(Number.isFinite(latestStart), 'every container reports when it started');
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, latestStart + 12_000 - Date.now())));
    assert.equal(await podStatusWrites(), before, 'no status written while waiting');

    const oldPid = await daemonPid('nodelet');
    await stopHarnessAgent();
    const restartedAt = Date.now();
    await clusterUp();
    const newPid = await daemonPid('nodelet');
    assert.ok(newPid !== undefined && newPid !== oldPid, 'a new agent process runs');
    const client = redis;
    assert.ok(client !== undefined);
    await eventually('the new agent reconciled every pod', async () => {
      const done = await reconciledSince(client, restartedAt);
      return [...uids].every((uid) => done.has(uid)) ? true : undefined;
    }, 60_000);
    // A status write is handed to the status manager's background writer: give it time to land.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const after = await podStatusWrites();
    t.diagnostic(`pod status writes (PATCH/PUT, every client) ${before} before the restart, ${after} after every pod was reconciled by the new agent`);
    assert.equal(after - before, 0, 'status writes after the restart');

    const final = (await allPods()).filter((p) => p.metadata?.namespace === namespace);
    assert.equal(final.length, names.length, 'every pod still there');
    for (const p of final) {
      const name = p.metadata?.name ?? '';
      assert.ok(settled(p), `${name}: still ${name === DONE ? 'Succeeded' : 'Running and Ready'}`);
      assert.deepEqual(containerIds(p), containersBefore.get(name), `${name}: the same containers`);
      if (name === DONE) continue;
      const [id] = containerIds(p);
      const state = (JSON.parse(await crictl(['inspect', id ?? ''])) as { status: { state: string } }).status.state;
      assert.equal(state, 'CONTAINER_RUNNING', `${name}: still running in the runtime`);
    }
  });
});
