/**
 * The kubelet's pod flow counters, through the assembled per-pod machinery: a sandbox created
 * counts a started pod and a failed creation an error (`kubelet_started_pods_*`); a pod's
 * containers are counted at its first admission only (`kubelet_containers_per_pod_count`); a pod
 * found in the runtime that no run of this agent knew counts once as an orphan
 * (`kubelet_orphaned_runtime_pods_total`), a pod this agent ran and then lost from its source does not.
 */
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { afterEach, describe, it } from 'node:test';
import { basePod, UID } from '../../test/doubles/pod-fixtures.js';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';

interface Counts {
  started: number;
  failed: number;
  orphans: number;
  containers: number[];
  sandboxRuns: { runtimeHandler: string; failed: boolean }[];
  containerEvents: string[];
  ensures: string[];
  restarted: boolean[];
}

function recorder(): { counts: Counts; metrics: NonNullable<Parameters<typeof createReconcilerHarness>[0]>['podFlowMetrics'] & object } {
  const counts: Counts = { started: 0, failed: 0, orphans: 0, containers: [], sandboxRuns: [], containerEvents: [], ensures: [], restarted: [] };
  return {
    counts,
    metrics: {
      sandboxCreating: () => { counts.started += 1; },
      sandboxFailed: () => { counts.failed += 1; },
      sandboxRun: ({ runtimeHandler, failed }) => { counts.sandboxRuns.push({ runtimeHandler, failed }); },
      orphanFound: () => { counts.orphans += 1; },
      podRestarted: (isStatic) => { counts.restarted.push(isStatic); },
      podAdmitted: (pod: V1Pod) => { counts.containers.push(pod.spec?.containers.length ?? 0); },
      containerStarting: (type) => { counts.containerEvents.push(`start ${type}`); },
      containerFailed: (type, code) => { counts.containerEvents.push(`fail ${type} ${code}`); },
      containerTerminated: ({ containerType, exitCode, reason }) => { counts.containerEvents.push(`terminated ${containerType} ${String(exitCode)} ${reason}`); },
      ensured: ({ pullPolicy, presentLocally, pullRequired }) => { counts.ensures.push(`${pullPolicy} present=${String(presentLocally)} required=${String(pullRequired)}`); },
      mustPullChecked: () => undefined,
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
    assert.deepEqual(counts.sandboxRuns, [{ runtimeHandler: '', failed: true }, { runtimeHandler: '', failed: false }], 'every RunPodSandbox call, by handler');
  });

  it('counts containers started past their backoff and failed by the kubelet’s reason, and each termination once', async () => {
    const { counts, metrics } = recorder();
    h = await createReconcilerHarness({ podFlowMetrics: metrics });
    h.store.set(UID, basePod((p) => {
      p.spec!.containers = [p.spec!.containers[0]!];
      p.spec!.containers[0]!.image = 'docker.io/library/absent:1';
      p.spec!.restartPolicy = 'Never';
    }));
    h.runtime.injectError('pullImage', new Error('connection refused'));
    await assert.rejects(h.reconciler().reconcile(ref));
    assert.deepEqual(counts.containerEvents, ['start container', 'fail container ErrImagePull']);
    await h.clock.advance(60_000);
    await h.reconciler().reconcile(ref);
    assert.deepEqual(counts.containerEvents.slice(2), ['start container']);
    assert.deepEqual(counts.ensures, ['IfNotPresent present=false required=true', 'IfNotPresent present=false required=true'], 'each ensure-image request, the failed pull too');
    const [running] = await h.runtime.listContainers();
    h.runtime.setContainerExited(running!.id, 3);
    await h.reconciler().reconcile(ref).catch(() => undefined);
    await h.reconciler().reconcile(ref).catch(() => undefined);
    assert.deepEqual(counts.containerEvents.filter((e) => e.startsWith('terminated')), ['terminated container 3 Error'], 'counted once, not again by the next status');
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
