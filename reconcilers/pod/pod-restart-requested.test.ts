/**
 * Component tests of a pod whose restart was requested (its source removed it and delivered it
 * again under the same UID) in the assembled reconciler: the run stops it with its own grace
 * period and removes it, and only the housekeeping's `forgetPodsToRestart` lets it run afresh,
 * counted by `kubelet_restarted_pods_total` as the kubelet labels it.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { podFlowMetrics } from '../../server/pod-metrics.js';
import { basePod, UID } from '../../test/doubles/pod-fixtures.js';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';
import { MetricsRegistry } from '../../util/metrics.js';

const restarted = (registry: MetricsRegistry, isStatic: string): string | undefined =>
  registry.text().split('\n').find((l) => l.startsWith(`kubelet_restarted_pods_total{static="${isStatic}"} `))?.split(' ')[1];

describe('a pod whose restart was requested, in the assembled reconciler', () => {
  let h: ReconcilerHarness;
  let registry: MetricsRegistry;

  beforeEach(async () => {
    registry = new MetricsRegistry();
    h = await createReconcilerHarness({ podFlowMetrics: podFlowMetrics(registry) });
  });

  afterEach(async () => {
    await h.cleanup();
  });

  const sandboxIds = async (): Promise<string[]> => (await h.runtime.listPodSandbox()).map((s) => s.id);
  const pod = (): V1Pod => basePod((p) => (p.spec!.terminationGracePeriodSeconds = 12));

  it('stops a running pod with its grace period, removes it, and starts it afresh only once the housekeeping forgot it', async () => {
    h.store.set(UID, pod());
    await h.reconciler().reconcile(ref);
    const [first] = await sandboxIds();
    const lifecycle = h.sync().lifecycle;
    assert.equal(lifecycle.requestRestart(ref), true);

    await h.reconciler().reconcile(ref);
    assert.deepEqual(h.runtime.callsTo('stopContainer').map((c) => c.args[1]), [12, 12], "each container stopped with the pod's grace period");
    assert.deepEqual(await h.runtime.listContainers(), []);
    assert.deepEqual(await sandboxIds(), []);
    const record = lifecycle.get(UID);
    assert.equal(record?.phase, 'terminated');
    assert.ok(record?.removedAt !== undefined);
    assert.equal(h.status.last()?.phase, 'Running', 'the stop is reported, not as a finished pod: it runs again');

    assert.equal(await h.reconciler().forgetRemovedPods(() => false), 0, 'a source still has it: not forgotten as a gone pod');
    assert.deepEqual(await h.reconciler().forgetPodsToRestart((uid) => uid === UID), [], 'a run in flight keeps it');
    assert.deepEqual(await h.reconciler().forgetPodsToRestart(() => false), [ref]);
    assert.equal(lifecycle.get(UID), undefined);
    assert.equal(restarted(registry, ''), '1', 'an API pod: static=""');
    assert.equal(restarted(registry, 'true'), '0');
    assert.deepEqual(await h.reconciler().forgetPodsToRestart(() => false), [], 'once');

    await h.reconciler().reconcile(ref);
    const [second] = await sandboxIds();
    assert.ok(second !== undefined && second !== first, 'a new sandbox');
    assert.equal(h.status.last()?.phase, 'Running');
    assert.deepEqual(h.status.last()?.containerStatuses?.map((c) => c.restartCount), [0, 0], 'no instance and no log file left: the restart counts start at 0');
  });

  it('leaves a pod not removed yet, or gone from its source again, to the run and to the forget of a gone pod', async () => {
    h.store.set(UID, pod());
    await h.reconciler().reconcile(ref);
    h.sync().lifecycle.requestRestart(ref);
    assert.deepEqual(await h.reconciler().forgetPodsToRestart(() => false), [], 'still running: the run stops it first');
    await h.reconciler().reconcile(ref);
    h.store.delete(UID);
    assert.deepEqual(await h.reconciler().forgetPodsToRestart(() => false), []);
    assert.equal(await h.reconciler().forgetRemovedPods(() => false), 1, 'gone again: forgotten as any pod gone from its sources');
    assert.equal(restarted(registry, ''), '0');
  });

  it('removes a finished pod without killing anything, and restarts it', async () => {
    h.store.set(UID, basePod((p) => (p.spec!.restartPolicy = 'Never')));
    await h.reconciler().reconcile(ref);
    for (const c of await h.runtime.listContainers()) h.runtime.setContainerExited(c.id, 0);
    await h.reconciler().reconcile(ref);
    assert.equal(h.sync().lifecycle.get(UID)?.phase, 'terminated');
    const stops = h.runtime.callsTo('stopContainer').length;
    h.sync().lifecycle.requestRestart(ref);
    await h.reconciler().reconcile(ref);
    assert.equal(h.runtime.callsTo('stopContainer').length, stops, 'nothing ran any more');
    assert.deepEqual(await h.runtime.listContainers(), []);
    assert.ok(h.sync().lifecycle.get(UID)?.removedAt !== undefined);
    assert.deepEqual(await h.reconciler().forgetPodsToRestart(() => false), [ref]);
  });
});
