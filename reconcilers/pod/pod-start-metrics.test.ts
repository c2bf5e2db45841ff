/**
 * The pod start duration, through the assembled per-pod machinery: measured once, from the pod's
 * admission to the first status that turns it Running (time spent on a failed pull and its
 * backoff included); not again on later reconciles, nor by a restarted agent for a pod already
 * Running; never for a pod that does not run; the tracker forgets a pod that is gone.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { basePod, UID } from '../../test/doubles/pod-fixtures.js';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';
import { PodStartTracker } from '../status/pod-start-tracker.js';

describe('pod start duration', () => {
  let h: ReconcilerHarness | undefined;
  afterEach(async () => {
    await h?.cleanup();
  });

  it('measures admission to Running once, across a failed pull, and not again after an agent restart', async () => {
    const starts: number[] = [];
    h = await createReconcilerHarness({ podStartMetrics: { podStarted: (s) => starts.push(s) } });
    h.store.set(UID, basePod((p) => (p.spec!.containers[0]!.image = 'docker.io/library/absent:1')));
    h.runtime.injectError('pullImage', new Error('connection refused'));
    await assert.rejects(h.reconciler().reconcile(ref));
    assert.notEqual(h.status.last()?.phase, 'Running');
    assert.deepEqual(starts, []);
    await h.clock.advance(30_000);
    await h.reconciler().reconcile(ref);
    assert.equal(h.status.last()?.phase, 'Running');
    assert.deepEqual(starts, [30]);
    await h.reconciler().reconcile(ref);
    h.restartAgent();
    await h.reconciler().reconcile(ref);
    assert.equal(h.status.last()?.phase, 'Running');
    assert.deepEqual(starts, [30], 'one measurement per pod');
  });

  it('a pod that never runs is not measured; a forgotten pod is dropped', () => {
    const clock = createFakeClock();
    const starts: number[] = [];
    const tracker = new PodStartTracker({ clock, metrics: { podStarted: (s) => starts.push(s) } });
    tracker.podAdmitted(ref);
    tracker.statusChanged(UID, undefined, { phase: 'Pending' });
    tracker.statusChanged(UID, { phase: 'Pending' }, { phase: 'Failed' });
    assert.equal(tracker.size, 1);
    tracker.podForgotten(ref);
    assert.equal(tracker.size, 0);
    tracker.statusChanged(UID, { phase: 'Pending' }, { phase: 'Running' });
    assert.deepEqual(starts, []);
  });
});
