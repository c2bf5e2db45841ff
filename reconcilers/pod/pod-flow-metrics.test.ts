/**
 * The kubelet's pod flow counters, through the assembled per-pod machinery: a sandbox created
 * counts a started pod and a failed creation an error (`kubelet_started_pods_*`); a pod's
 * containers are counted at its first admission only (`kubelet_containers_per_pod_count`); a pod
 * found in the runtime that no run of this agent knew counts once as an orphan
 * (`kubelet_orphaned_runtime_pods_total`), a pod this agent ran and then lost from its source does not.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { basePod, UID } from '../../test/doubles/pod-fixtures.js';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';

function recorder(): { counts: { started: number; failed: number; orphans: number; containers: number[] }; metrics: { sandboxCreating(): void; sandboxFailed(): void; orphanFound(): void; podWorkerStarted(n: number): void } } {
  const counts = { started: 0, failed: 0, orphans: 0, containers: [] as number[] };
  return {
    counts,
    metrics: {
      sandboxCreating: () => { counts.started += 1; },
      sandboxFailed: () => { counts.failed += 1; },
      orphanFound: () => { counts.orphans += 1; },
      podWorkerStarted: (n) => { counts.containers.push(n); },
    },
  };
}

describe('pod flow metrics', () => {
  let h: ReconcilerHarness | undefined;
  afterEach(async () => {
    await h?.cleanup();
  });

  it('counts sandboxes created and failed, and a pod’s containers once at its first admission', async () => {
    const { counts, metrics } = recorder();
    h = await createReconcilerHarness({ podFlowMetrics: metrics });
    h.store.set(UID, basePod());
    h.runtime.injectError('runPodSandbox', new Error('CNI failed'));
    await assert.rejects(h.reconciler().reconcile(ref));
    assert.deepEqual({ started: counts.started, failed: counts.failed }, { started: 1, failed: 1 });
    await h.reconciler().reconcile(ref);
    await h.reconciler().reconcile(ref);
    assert.deepEqual({ started: counts.started, failed: counts.failed }, { started: 2, failed: 1 }, 'one more sandbox, none for the sync that found it running');
    assert.deepEqual(counts.containers, [basePod().spec?.containers.length], 'counted once per pod');
    assert.equal(counts.orphans, 0);
  });

  it('counts a runtime pod no run of this agent knew as an orphan, once; a pod it ran is none', async () => {
    const { counts, metrics } = recorder();
    h = await createReconcilerHarness({ podFlowMetrics: metrics });
    h.store.set(UID, basePod());
    await h.reconciler().reconcile(ref);
    h.store.delete(UID);
    h.runtime.injectError('stopContainer', new Error('runtime busy'));
    await assert.rejects(h.reconciler().reconcile(ref));
    assert.equal(counts.orphans, 0, 'the agent ran it: not an orphan');
    // Put it back in the runtime's hands of a restarted agent that never saw it.
    h.store.set(UID, basePod());
    h.restartAgent();
    await h.reconciler().reconcile(ref);
    h.restartAgent();
    h.store.delete(UID);
    h.runtime.injectError('stopContainer', new Error('runtime busy'));
    await assert.rejects(h.reconciler().reconcile(ref));
    await h.reconciler().reconcile(ref);
    assert.equal(counts.orphans, 1, 'found once by the restarted agent, not again by its next run');
  });
});
