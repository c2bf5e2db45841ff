/**
 * Probes in the assembled per-pod machinery (`assemblePodSync`), on the fake runtime and the fake
 * clock: readiness reaches the status without a reconcile, liveness failures restart the container
 * with the kubelet's events, a startup probe gates the others, and workers stop with the pod.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { basePod, UID } from '../../test/doubles/pod-fixtures.js';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';

function ok(): { stdout: Buffer; stderr: Buffer; exitCode: number } {
  return { stdout: Buffer.from('ok'), stderr: Buffer.alloc(0), exitCode: 0 };
}
function bad(): { stdout: Buffer; stderr: Buffer; exitCode: number } {
  return { stdout: Buffer.from('not healthy'), stderr: Buffer.alloc(0), exitCode: 1 };
}

function appStatus(h: ReconcilerHarness): { ready?: boolean; started?: boolean; restartCount?: number } | undefined {
  return h.status.podStatus(UID)?.containerStatuses?.find((c) => c.name === 'app');
}

function readyCondition(h: ReconcilerHarness): string | undefined {
  return h.status.podStatus(UID)?.conditions?.find((c) => c.type === 'Ready')?.status;
}

/** A pod whose `app` container has the probes `mutate` sets; `sidecar` has none. */
function probedPod(mutate: (app: NonNullable<V1Pod['spec']>['containers'][number]) => void): V1Pod {
  return basePod((p) => {
    mutate(p.spec!.containers[0]!);
  });
}

describe('probes in the assembled reconciler', () => {
  let h: ReconcilerHarness;
  let healthy: boolean;

  beforeEach(async () => {
    h = await createReconcilerHarness();
    healthy = true;
    h.runtime.execHandler = () => (healthy ? ok() : bad());
  });

  afterEach(async () => {
    await h.sync().prober.stopAll();
    await h.cleanup();
  });

  it('keeps a container with a readiness probe not ready until the probe succeeds, then ready, without a reconcile', async () => {
    healthy = false;
    h.store.set(UID, probedPod((app) => (app.readinessProbe = { exec: { command: ['check'] }, periodSeconds: 1 })));
    await h.reconciler().reconcile(ref);
    assert.equal(appStatus(h)?.ready, false, 'a readiness probe that has not succeeded yet means not ready');
    assert.equal(readyCondition(h), 'False');
    await h.clock.advance(2500);
    assert.ok(h.runtime.callsTo('execSync').length >= 1, 'the probe ran in the container');
    assert.equal(appStatus(h)?.ready, false);
    assert.ok(h.events.events.some((e) => e.reason === 'Unhealthy' && e.message === 'Readiness probe failed: not healthy'));
    healthy = true;
    const reconcilesBefore = h.syncRequests.length;
    await h.clock.advance(1000);
    assert.equal(appStatus(h)?.ready, true);
    assert.equal(readyCondition(h), 'True');
    assert.equal(h.syncRequests.length, reconcilesBefore, 'readiness needs no reconcile');
    // Three failures in a row (the default threshold) make it not ready again.
    healthy = false;
    await h.clock.advance(2000);
    assert.equal(appStatus(h)?.ready, true, 'two failures are below the threshold');
    await h.clock.advance(1000);
    assert.equal(appStatus(h)?.ready, false);
  });

  it('restarts a container whose liveness probe fails failureThreshold times, with Unhealthy and Killing events', async () => {
    h.store.set(UID, probedPod((app) => (app.livenessProbe = { exec: { command: ['check'] }, periodSeconds: 1, failureThreshold: 2 })));
    await h.reconciler().reconcile(ref);
    await h.clock.advance(1500);
    assert.equal(h.syncRequests.length, 0, 'a healthy container asks for nothing');
    healthy = false;
    await h.clock.advance(2000);
    assert.deepEqual(h.syncRequests.map((r): string => r.reason), ['liveness probe failed']);
    const before = (await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': 'app' } }))[0]!;
    await h.reconciler().reconcile(ref);
    assert.equal(h.runtime.getContainer(before.id)?.state, 'CONTAINER_EXITED', 'the failing instance was stopped');
    const apps = await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': 'app' } });
    assert.equal(apps.filter((c) => c.state === 'CONTAINER_RUNNING').length, 1);
    assert.equal(appStatus(h)?.restartCount, 1);
    assert.ok(h.events.events.some((e) => e.reason === 'Unhealthy' && e.message === 'Liveness probe failed: not healthy'));
    assert.ok(h.events.events.some((e) => e.reason === 'Killing' && e.message === 'Container app failed liveness probe, will be restarted'));
    // The new instance is probed afresh: healthy again, nothing more happens.
    healthy = true;
    await h.clock.advance(3000);
    assert.equal(h.syncRequests.length, 1);
  });

  it('gates liveness and readiness on the startup probe, and reports started only once it succeeds', async () => {
    healthy = false;
    h.store.set(UID, probedPod((app) => {
      app.startupProbe = { exec: { command: ['started'] }, periodSeconds: 1, failureThreshold: 30 };
      app.livenessProbe = { exec: { command: ['alive'] }, periodSeconds: 1, failureThreshold: 1 };
    }));
    await h.reconciler().reconcile(ref);
    assert.equal(appStatus(h)?.started, false);
    await h.clock.advance(3500);
    const commands = h.runtime.callsTo('execSync').map((c) => ((c.args[1] as readonly string[])[0] ?? ''));
    assert.ok(commands.length > 0 && commands.every((c) => c === 'started'), `only the startup probe ran: ${commands.join(',')}`);
    assert.equal(h.syncRequests.length, 0, 'a failing liveness probe held back by startup restarts nothing');
    healthy = true;
    await h.clock.advance(1000);
    assert.equal(appStatus(h)?.started, true);
    assert.equal(appStatus(h)?.ready, true);
    assert.deepEqual(h.syncRequests.map((r): string => r.reason), ['startup probe succeeded']);
    await h.clock.advance(2000);
    assert.ok(h.runtime.callsTo('execSync').some((c) => ((c.args[1] as readonly string[])[0] ?? '') === 'alive'), 'liveness runs once started');
  });

  it('stops every probe worker when the pod terminates, and when it is forgotten', async () => {
    h.store.set(UID, probedPod((app) => (app.readinessProbe = { exec: { command: ['check'] }, periodSeconds: 1 })));
    await h.reconciler().reconcile(ref);
    assert.equal(h.sync().prober.workerCount(), 1);
    h.store.set(UID, { ...h.store.get(UID)!, metadata: { ...h.store.get(UID)!.metadata, deletionTimestamp: new Date() } });
    await h.reconciler().reconcile(ref);
    assert.equal(h.sync().prober.workerCount(), 0);
    const calls = h.runtime.callsTo('execSync').length;
    await h.clock.advance(5000);
    assert.equal(h.runtime.callsTo('execSync').length, calls, 'no probe after the pod terminated');
  });
});
