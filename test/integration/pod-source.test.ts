/**
 * The pod source against the test cluster's real kube-apiserver. A random namespace holds pods
 * bound directly (spec.nodeName) to two Node objects this test registers with the admin kubeconfig
 * (so the pod GC keeps the pods); no kubelet runs them, the test only watches. Pods are deleted
 * with grace period 0 (nothing would confirm a graceful deletion), then the namespace and Nodes.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import { pino } from 'pino';
import { isAlreadyExists, isNotFound } from '../../util/api-errors.js';
import { createPodSource, type PodSource } from '../../controllers/pod-sources/api-source.js';
import { kubeClientFrom } from '../doubles/kube-client.js';
import type { KubeClient } from '../../kube/client.js';
import { podEventsTo } from '../doubles/pod-events.js';

const logger = pino({ level: process.env.LOG_LEVEL ?? 'silent' });

async function eventually<T>(read: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

async function ignoreNotFound(call: () => Promise<unknown>): Promise<void> {
  try {
    await call();
  } catch (err: unknown) {
    if (!isNotFound(err)) throw err;
  }
}

describe('pod source against the real API server', () => {
  const suffix = randomBytes(4).toString('hex');
  const namespace = `it-pods-${suffix}`;
  const nodeName = `it-podnode-${suffix}`;
  const otherNode = `it-othernode-${suffix}`;
  const kubeConfig = new KubeConfig();
  let core: CoreV1Api;
  const events: { uid: string; reason: string }[] = [];
  const sources: PodSource[] = [];

  const sawEvent = (uid: string, reason: string): true | undefined =>
    events.some((e) => e.uid === uid && e.reason === reason) ? true : undefined;

  async function createPod(name: string, node: string): Promise<V1Pod> {
    return core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name },
        spec: {
          nodeName: node,
          automountServiceAccountToken: false,
          containers: [{ name: 'main', image: 'docker.io/library/busybox:1.35', command: ['sleep', '3600'] }],
        },
      },
    });
  }

  const deletePod = (name: string): Promise<void> =>
    ignoreNotFound(() => core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 }));

  function startSource(config: KubeClient = kubeClientFrom(), node = nodeName): PodSource {
    const source = createPodSource({ kube: config, nodeName: node, logger, podEvents: podEventsTo((ref, reason) => events.push({ uid: ref.uid, reason })) });
    sources.push(source);
    return source;
  }

  before(async () => {
    const path = process.env.KUBECONFIG ?? '';
    assert.ok(path !== '', 'KUBECONFIG is not set: run `npm run cluster:up` and `source .cluster/env`');
    kubeConfig.loadFromFile(path);
    core = kubeConfig.makeApiClient(CoreV1Api);
    for (const name of [nodeName, otherNode]) await core.createNode({ body: { metadata: { name } } });
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    // Pod admission needs the namespace's default service account; don't wait for the controller.
    try {
      await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'default' } } });
    } catch (err: unknown) {
      if (!isAlreadyExists(err)) throw err;
    }
  });

  after(async () => {
    for (const source of sources) source.stop();
    const pods = await core.listNamespacedPod({ namespace });
    await Promise.all(pods.items.map((p) => deletePod(p.metadata?.name ?? '')));
    await ignoreNotFound(() => core.deleteNamespace({ name: namespace }));
    for (const name of [nodeName, otherNode]) await ignoreNotFound(() => core.deleteNode({ name }));
  });

  it('reports add, update and delete of pods bound to its node by UID, and never sees other nodes', async () => {
    const source = startSource();
    await source.start();
    assert.equal(source.synced(), true);
    assert.equal(source.healthy(), true);

    const foreign = await createPod('elsewhere', otherNode);
    const created = await createPod('web', nodeName);
    const uid = created.metadata?.uid ?? '';
    await eventually(() => sawEvent(uid, 'added'), 'onPod(added)');
    assert.equal(source.get(uid)?.metadata?.name, 'web');

    await core.patchNamespacedPod(
      { name: 'web', namespace, body: { metadata: { labels: { tier: 'frontend' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await eventually(() => (source.get(uid)?.metadata?.labels?.tier === 'frontend' ? true : undefined), 'the updated pod');
    assert.ok(sawEvent(uid, 'updated'));

    await deletePod('web');
    await eventually(() => sawEvent(uid, 'deleted'), 'onPod(deleted)');
    assert.equal(source.get(uid), undefined);

    const foreignUid = foreign.metadata?.uid ?? '';
    assert.equal(source.get(foreignUid), undefined);
    assert.equal(events.some((e) => e.uid === foreignUid), false, 'a pod of another node reached onPod');
    assert.deepEqual(source.list().map((p) => p.spec?.nodeName).filter((n) => n !== nodeName), []);
    source.stop();
  });

  it('after a restart, relists every pod and reports pods deleted while it was away as vanished', async () => {
    const source = startSource();
    const stays = await createPod('stays', nodeName);
    const goes = await createPod('goes', nodeName);
    await source.start();
    const staysUid = stays.metadata?.uid ?? '';
    const goesUid = goes.metadata?.uid ?? '';
    assert.ok(source.get(goesUid));

    source.stop();
    await deletePod('goes');
    const late = await createPod('late', nodeName);
    events.length = 0;
    await source.start();

    assert.ok(sawEvent(goesUid, 'vanished'), 'a deletion missed while stopped still reaches onPod');
    assert.ok(sawEvent(staysUid, 'relisted'));
    assert.ok(sawEvent(late.metadata?.uid ?? '', 'relisted'));
    assert.equal(source.get(goesUid), undefined);
    assert.equal(source.healthy(), true);

    events.length = 0;
    source.resyncAll();
    assert.deepEqual(events.map((e) => e.reason), ['resync', 'resync']);
    source.stop();
  });

  it("lists and watches with the node's own credentials (Node authorizer, field selector on itself)", async () => {
    const nodeKubeconfig = process.env.NODELET_KUBECONFIG ?? '';
    const ownName = process.env.NODE_NAME ?? '';
    assert.ok(nodeKubeconfig !== '' && ownName !== '', 'NODELET_KUBECONFIG and NODE_NAME must be set (source .cluster/env)');
    const source = startSource(kubeClientFrom(nodeKubeconfig), ownName);
    await source.start();
    assert.equal(source.synced(), true);
    assert.equal(source.healthy(), true);
    assert.ok(source.list().every((p) => p.spec?.nodeName === ownName));
    source.stop();
  });
});
