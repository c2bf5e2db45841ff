/**
 * The node controller against the test cluster's real kube-apiserver and controller-manager.
 * Each case registers its own Node (`it-node-<random>`) with the admin kubeconfig, never the agent's
 * `$NODE_NAME`, and deletes the Node and its Lease afterwards. The controller runs on a fake clock:
 * heartbeats happen when a case advances it, API calls are real.
 * One case uses the node's own credentials (NODELET_KUBECONFIG) to show NodeRestriction confines
 * them to their own Node and Lease.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import {
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Lease,
  type V1Node,
} from '@kubernetes/client-node';
import { pino } from 'pino';
import { isForbidden, isNotFound } from '../../util/api-errors.js';
import { createFakeClock, type FakeClock } from '../doubles/fake-clock.js';
import { createHostInfo, parseOsRelease } from '../../controllers/node/host-info.js';
import { NODE_LEASE_NAMESPACE } from '../../controllers/node/lease.js';
import { createNodeController, type NodeController, type NodeRuntime } from '../../controllers/node/node-controller.js';
import type { NodeReadiness } from '../../controllers/node/node-status.js';
import { kubeClientFrom } from '../doubles/kube-client.js';

const logger = pino({ level: process.env.LOG_LEVEL ?? 'silent' });
const run = promisify(execFile);
const NODE_IP = process.env.NODE_IP ?? '10.213.0.1';

/** Polls `read` until it yields a value; fails naming `what` after `timeoutMs`. */
async function eventually<T>(read: () => Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

async function orUndefined<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (err: unknown) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Bytes of a binary-SI or plain quantity as the API server canonicalizes them. */
function quantityBytes(quantity: string | undefined): number {
  // Memory is binary (Ki); ephemeral storage a decimal byte count since 1.37 (k, M, G, … when whole).
  const match = /^(\d+)(Ki|Mi|Gi|Ti|k|M|G|T|P|E)?$/.exec(quantity ?? '');
  assert.ok(match, `unexpected quantity ${quantity ?? '(none)'}`);
  const suffix = match[2] ?? '';
  const binary = { Ki: 1, Mi: 2, Gi: 3, Ti: 4 }[suffix];
  const decimal = { k: 1, M: 2, G: 3, T: 4, P: 5, E: 6 }[suffix] ?? 0;
  return Number(match[1]) * (binary === undefined ? 1000 ** decimal : 1024 ** binary);
}

/** MicroTime strings have six fractional digits; Date keeps milliseconds. */
function microTimeMs(value: unknown): number {
  const ms = value instanceof Date ? value.getTime() : Date.parse(String(value));
  assert.ok(!Number.isNaN(ms), `not a time: ${String(value)}`);
  return ms;
}

function assertHostCapacity(node: V1Node): void {
  const capacity = node.status?.capacity ?? {};
  assert.equal(capacity.cpu, String(os.cpus().length));
  assert.equal(quantityBytes(capacity.memory), Math.floor(os.totalmem() / 1024) * 1024);
  assert.ok(quantityBytes(capacity['ephemeral-storage']) > 0);
  assert.equal(capacity.pods, '110');
  assert.deepEqual(node.status?.allocatable, capacity);
}

function assertAddressesAndNodeInfo(node: V1Node): void {
  assert.deepEqual(
    node.status?.addresses?.map((a) => [a.type, a.address]),
    [
      ['InternalIP', NODE_IP],
      ['Hostname', os.hostname().toLowerCase()],
    ],
  );
  const info = node.status?.nodeInfo;
  assert.ok(info);
  assert.equal(info.kubeletVersion, 'v0.1.0-nodelet');
  assert.equal(info.containerRuntimeVersion, 'containerd://1.6.20');
  assert.equal(info.operatingSystem, 'linux');
  assert.equal(info.architecture, 'amd64');
  assert.equal(info.machineID, readFileSync('/etc/machine-id', 'utf8').trim());
  assert.equal(info.bootID, readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim());
  assert.equal(info.kernelVersion, os.release());
  assert.equal(info.osImage, parseOsRelease(readFileSync('/etc/os-release', 'utf8')).PRETTY_NAME);
  assert.equal(node.status?.daemonEndpoints?.kubeletEndpoint?.Port, 10250);
}

interface Harness {
  readonly name: string;
  readonly clock: FakeClock;
  readonly controller: NodeController;
  readonly setReadiness: (next: NodeReadiness) => void;
}

const READY: NodeReadiness = { ready: true, reason: '', message: '' };

describe('node controller against the real API server', () => {
  const kubeConfig = new KubeConfig();
  let core: CoreV1Api;
  let leases: CoordinationV1Api;
  const created: string[] = [];
  const running: NodeController[] = [];

  before(() => {
    const path = process.env.KUBECONFIG ?? '';
    assert.ok(path !== '', 'KUBECONFIG is not set: run `npm run cluster:up` and `source .cluster/env`');
    kubeConfig.loadFromFile(path);
    core = kubeConfig.makeApiClient(CoreV1Api);
    leases = kubeConfig.makeApiClient(CoordinationV1Api);
  });

  after(async () => {
    await Promise.all(running.map((c) => c.stop()));
    for (const name of created) {
      await orUndefined(() => leases.deleteNamespacedLease({ name, namespace: NODE_LEASE_NAMESPACE }));
      await orUndefined(() => core.deleteNode({ name }));
    }
  });

  function startController(name: string, clock: FakeClock = createFakeClock(Date.now())): Harness {
    let readiness = READY;
    const runtime: NodeRuntime = {
      version: () => Promise.resolve({ runtimeName: 'containerd', runtimeVersion: '1.6.20~ds1' }),
      readiness: () => Promise.resolve(readiness),
    };
    const controller = createNodeController({
      kube: kubeClientFrom(),
      nodeName: name,
      nodeIp: NODE_IP,
      hostInfo: createHostInfo({ rootDir: os.tmpdir() }),
      runtime,
      logger,
      clock,
      // No jitter: the periods are driven exactly by the fake clock (the jitter has its unit tests).
      random: () => 0,
    });
    if (!created.includes(name)) created.push(name);
    running.push(controller);
    controller.start();
    return { name, clock, controller, setReadiness: (next) => (readiness = next) };
  }

  const readNode = (name: string): Promise<V1Node | undefined> => orUndefined(() => core.readNode({ name }));
  const readLease = (name: string): Promise<V1Lease | undefined> =>
    orUndefined(() => leases.readNamespacedLease({ name, namespace: NODE_LEASE_NAMESPACE }));
  const readyOf = (node: V1Node | undefined) => node?.status?.conditions?.find((c) => c.type === 'Ready');
  const uniqueNodeName = (): string => `it-node-${randomBytes(4).toString('hex')}`;

  it('registers a Node that becomes Ready with the host capacity, addresses and nodeInfo', async () => {
    const { name } = startController(uniqueNodeName());
    const node = await eventually(async () => {
      const current = await readNode(name);
      return readyOf(current)?.status === 'True' ? current : undefined;
    }, 'Ready=True');

    assertHostCapacity(node);
    assertAddressesAndNodeInfo(node);
    assert.deepEqual(
      ['kubernetes.io/hostname', 'kubernetes.io/os', 'kubernetes.io/arch'].map((k) => node.metadata?.labels?.[k]),
      [name, 'linux', 'amd64'],
    );
    assert.deepEqual(
      node.status?.conditions?.filter((c) => c.type !== 'Ready').map((c) => [c.type, c.status]),
      [
        ['MemoryPressure', 'False'],
        ['DiskPressure', 'False'],
        ['PIDPressure', 'False'],
      ],
    );

    // kubectl prints the agent version, and the node lifecycle controller accepts the status:
    // it lifts the not-ready taint the API server puts on every new Node.
    const { stdout } = await run('kubectl', ['get', 'node', name, '--no-headers', '-o', 'custom-columns=V:.status.nodeInfo.kubeletVersion,S:.status.conditions[?(@.type=="Ready")].status']);
    assert.deepEqual(stdout.trim().split(/\s+/), ['v0.1.0-nodelet', 'True']);
    await eventually(async () => {
      const taints = (await readNode(name))?.spec?.taints ?? [];
      return taints.some((t) => t.key === 'node.kubernetes.io/not-ready') ? undefined : true;
    }, 'the node lifecycle controller to remove the not-ready taint', 45_000);
  });

  it('renews its Lease, owned by the Node, each time the timers are driven', async () => {
    const { name, clock, controller } = startController(uniqueNodeName());
    const first = await eventually(() => readLease(name), 'the lease');
    const node = await eventually(() => readNode(name), 'the node');
    assert.equal(first.spec?.holderIdentity, name);
    assert.equal(first.spec?.leaseDurationSeconds, 40);
    const firstRenew = microTimeMs(first.spec?.renewTime);
    assert.equal(firstRenew, clock.now());

    for (let beat = 1; beat <= 2; beat += 1) {
      await clock.advance(10_000);
      const renewed = await eventually(async () => {
        const lease = await readLease(name);
        return microTimeMs(lease?.spec?.renewTime) === firstRenew + beat * 10_000 ? lease : undefined;
      }, `renewal ${beat}`);
      assert.deepEqual(renewed.metadata?.ownerReferences?.map((r) => [r.kind, r.name, r.uid]), [['Node', name, node.metadata?.uid]]);
    }
    assert.equal(controller.healthy(), true);
  });

  it('reports Ready=False with the runtime reason and a new transition time when readiness is lost', async () => {
    const { name, clock, controller, setReadiness } = startController(uniqueNodeName());
    const ready = await eventually(async () => {
      const condition = readyOf(await readNode(name));
      return condition?.status === 'True' ? condition : undefined;
    }, 'Ready=True');
    await clock.advance(5_000);
    setReadiness({ ready: false, reason: 'NetworkPluginNotReady', message: 'cni plugin not initialized' });
    assert.equal(await controller.refreshNow(), true);

    const notReady = readyOf(await readNode(name));
    assert.equal(notReady?.status, 'False');
    assert.equal(notReady.reason, 'KubeletNotReady');
    assert.equal(notReady.message, 'NetworkPluginNotReady: cni plugin not initialized');
    assert.equal(notReady.lastTransitionTime?.getTime(), Math.floor(clock.now() / 1000) * 1000);
    assert.ok(notReady.lastTransitionTime.getTime() > (ready.lastTransitionTime?.getTime() ?? Infinity));

    // Still not ready ten seconds later: the heartbeat moves, the transition time stays.
    await clock.advance(10_000);
    const later = await eventually(async () => {
      const condition = readyOf(await readNode(name));
      return condition?.lastHeartbeatTime?.getTime() === Math.floor(clock.now() / 1000) * 1000 ? condition : undefined;
    }, 'the next heartbeat');
    assert.equal(later.lastTransitionTime?.getTime(), notReady.lastTransitionTime.getTime());
  });

  it('keeps labels others added, and repairs the ones it owns, when the controller restarts', async () => {
    const name = uniqueNodeName();
    const first = startController(name);
    await eventually(async () => readyOf(await readNode(name)), 'the first status');
    await first.controller.stop();
    await core.patchNode(
      { name, body: { metadata: { labels: { 'example.com/team': 'blue', 'kubernetes.io/arch': 'wrong' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );

    const second = startController(name);
    await eventually(() => Promise.resolve(second.controller.healthy() ? true : undefined), 'the restarted controller to be healthy');
    const labels = (await readNode(name))?.metadata?.labels;
    assert.equal(labels?.['example.com/team'], 'blue');
    assert.equal(labels['kubernetes.io/arch'], 'amd64');
    assert.equal(labels['kubernetes.io/hostname'], name);
  });

  it("confines the node's own credentials to its own Node and Lease (NodeRestriction)", async () => {
    const nodeKubeconfig = process.env.NODELET_KUBECONFIG ?? '';
    const ownName = process.env.NODE_NAME ?? '';
    assert.ok(nodeKubeconfig !== '' && ownName !== '', 'NODELET_KUBECONFIG and NODE_NAME must be set (source .cluster/env)');
    const other = uniqueNodeName();
    startController(other);
    await eventually(() => readNode(other), 'the other node');

    const asNode = new KubeConfig();
    asNode.loadFromFile(nodeKubeconfig);
    const nodeCore = asNode.makeApiClient(CoreV1Api);
    const nodeLeases = asNode.makeApiClient(CoordinationV1Api);
    const strategic = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);

    await assert.rejects(
      nodeCore.patchNodeStatus({ name: other, body: { status: { conditions: [{ type: 'Ready', status: 'False' }] } } }, strategic),
      isForbidden,
      "a node may not patch another node's status",
    );
    await assert.rejects(
      nodeLeases.createNamespacedLease({
        namespace: NODE_LEASE_NAMESPACE,
        body: { metadata: { name: `${other}-x` }, spec: { holderIdentity: ownName } },
      }),
      isForbidden,
      'a node may not create a lease named after another node',
    );
    await assert.rejects(
      nodeCore.createNode({ body: { metadata: { name: `${other}-x` } } }),
      isForbidden,
      'a node may not register another node',
    );
    assert.equal(readyOf(await readNode(other))?.status, 'True', 'the other node is untouched');
    // Reading its own Node is allowed (the agent may or may not have registered it yet).
    await orUndefined(() => nodeCore.readNode({ name: ownName }));
  });
});
