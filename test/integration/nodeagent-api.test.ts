/**
 * The NodeAgent API adapter and watch loop against the test cluster's real kube-apiserver and CRD
 * (`crds/`, applied by `npm run cluster:up`). Each case works on its own NodeAgent
 * (`it-na-<random>`) with the admin kubeconfig, never the agent's own, and deletes it afterwards.
 * One case uses the node's credentials (NODELET_KUBECONFIG) to show the harness RBAC lets the
 * agent read and watch its NodeAgent.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { isAlreadyExists, isConflict } from '../../util/api-errors.js';
import { systemClock } from '../../util/clock.js';
import { kubeClientFrom } from '../doubles/kube-client.js';
import { createNodeAgentApi, type WatchEventType } from '../../controllers/nodeagent/api.js';
import { NODEAGENT_GROUP, NODEAGENT_PLURAL, NODEAGENT_VERSION, newNodeAgent, type NodeAgent } from '../../controllers/nodeagent/types.js';
import { createNodeAgentWatch } from '../../controllers/nodeagent/watch.js';

const logger = pino({ level: process.env.LOG_LEVEL ?? 'silent' });
const NODE_NAME = process.env.NODE_NAME ?? '';

function kubeConfigFrom(path: string | undefined): KubeConfig {
  if (path === undefined || path === '') throw new Error('the test cluster is not up: run `npm run cluster:up` (it writes .cluster/env)');
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(path);
  return kubeConfig;
}

const admin = kubeConfigFrom(process.env.KUBECONFIG);
/** The same credentials through the agent's own client, for the code under test. */
const adminKube = kubeClientFrom(process.env.KUBECONFIG);
const created: string[] = [];

function testName(): string {
  const name = `it-na-${randomBytes(3).toString('hex')}`;
  created.push(name);
  return name;
}

async function eventually<T>(read: () => T | undefined, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('NodeAgent API against the real API server', () => {
  after(async () => {
    const objects = admin.makeApiClient(CustomObjectsApi);
    for (const name of created) {
      await objects.deleteClusterCustomObject({ group: NODEAGENT_GROUP, version: NODEAGENT_VERSION, plural: NODEAGENT_PLURAL, name }).catch(() => undefined);
    }
  });

  it('reads nothing for a missing object, creates it, and answers AlreadyExists to a second create', async () => {
    const api = createNodeAgentApi(adminKube);
    const name = testName();
    assert.equal(await api.get(name), undefined);
    const agent = await api.create(newNodeAgent(name));
    assert.equal(agent.metadata.name, name);
    assert.equal(agent.metadata.generation, 1);
    assert.ok(agent.metadata.resourceVersion);
    await assert.rejects(api.create(newNodeAgent(name)), (err: unknown) => isAlreadyExists(err));
    assert.deepEqual((await api.get(name))?.spec, {});
  });

  it('replaces the status with optimistic concurrency: a stale resourceVersion is a Conflict', async () => {
    const api = createNodeAgentApi(adminKube);
    const name = testName();
    const agent = await api.create(newNodeAgent(name));
    const written = await api.replaceStatus({ ...agent, status: { pods: 3, nodeName: name } });
    assert.equal(written.status?.pods, 3);
    assert.notEqual(written.metadata.resourceVersion, agent.metadata.resourceVersion);
    assert.equal(written.metadata.generation, 1, 'a status write does not bump the generation');
    await assert.rejects(api.replaceStatus({ ...agent, status: { pods: 4 } }), (err: unknown) => isConflict(err));
    assert.equal((await api.get(name))?.status?.pods, 3);
  });

  it('watches one object by name: its changes arrive, other objects do not, and the server closes it after timeoutSeconds', async () => {
    const api = createNodeAgentApi(adminKube);
    const [name, other] = [testName(), testName()];
    const agent = await api.create(newNodeAgent(name));
    const events: { type: WatchEventType; object: unknown }[] = [];
    let ended: { err: unknown } | undefined;
    const handle = await api.watch(
      { name, resourceVersion: agent.metadata.resourceVersion ?? '', timeoutSeconds: 3 },
      { onEvent: (type, object) => events.push({ type, object }), onEnd: (err) => (ended = { err }) },
    );
    try {
      await api.create(newNodeAgent(other));
      await api.replaceStatus({ ...agent, status: { pods: 1 } });
      await eventually(() => (events.some((e) => e.type === 'MODIFIED') ? true : undefined), 'the MODIFIED event');
      const names = events.filter((e) => e.type !== 'BOOKMARK').map((e) => (e.object as NodeAgent).metadata.name);
      assert.deepEqual([...new Set(names)], [name]);
      const end = await eventually(() => ended, 'the server to close the watch', 10_000);
      assert.equal(end.err, undefined, 'a timeout close is clean');
    } finally {
      handle.stop();
    }
  });

  it('keeps a NodeAgent in view with the watch loop: created when missing, spec changes delivered, created again after deletion', async () => {
    const name = testName();
    const seen: NodeAgent[] = [];
    const watch = createNodeAgentWatch({ api: createNodeAgentApi(adminKube), name, clock: systemClock, logger, onObject: (a) => seen.push(a), watchTimeoutSeconds: 5 });
    watch.start();
    try {
      await eventually(() => (watch.healthy() ? true : undefined), 'the watch to be healthy');
      const objects = admin.makeApiClient(CustomObjectsApi);
      const resource = { group: NODEAGENT_GROUP, version: NODEAGENT_VERSION, plural: NODEAGENT_PLURAL, name };
      await objects.patchClusterCustomObject({ ...resource, body: [{ op: 'add', path: '/spec/paused', value: true }] });
      await eventually(() => seen.find((a) => (a.spec as { paused?: boolean }).paused === true), 'the spec change');
      const uid = seen[0]?.metadata.uid;
      await objects.deleteClusterCustomObject(resource);
      const recreated = await eventually(() => seen.find((a) => a.metadata.uid !== uid), 'the NodeAgent to be created again');
      assert.deepEqual(recreated.spec, {});
    } finally {
      await watch.stop();
    }
  });

  it('lets the node\'s own credentials read and watch the node\'s NodeAgent (harness RBAC)', async () => {
    const api = createNodeAgentApi(kubeClientFrom(process.env.NODELET_KUBECONFIG));
    assert.notEqual(NODE_NAME, '', 'NODE_NAME is set by .cluster/env');
    // The agent creates its NodeAgent as it starts; allow it a moment after the node turned Ready.
    let agent: NodeAgent | undefined;
    for (let tries = 0; agent === undefined && tries < 40; tries++) {
      agent = await api.get(NODE_NAME);
      if (agent === undefined) await new Promise((resolve) => setTimeout(resolve, 500));
    }
    assert.equal(agent?.metadata.name, NODE_NAME);
    let ended: { err: unknown } | undefined;
    const handle = await api.watch({ name: NODE_NAME, resourceVersion: agent?.metadata.resourceVersion ?? '', timeoutSeconds: 1 }, { onEvent: () => undefined, onEnd: (err) => (ended = { err }) });
    try {
      const end = await eventually(() => ended, 'the watch to end', 10_000);
      assert.equal(end.err, undefined, 'the watch was allowed (a 403 would end it with an error)');
    } finally {
      handle.stop();
    }
  });
});
