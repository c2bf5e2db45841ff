import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import type { PodKey } from '../../util/pod-key.js';
import type { PodLifecycleObserver } from './observer.js';
import { PodLifecycle } from './pod-lifecycle.js';

const key: PodKey = { uid: 'u1', namespace: 'ns', name: 'web' };

/** Records every callback as `name:detail`. */
function recorder(): PodLifecycleObserver & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    podAdmitted: (k) => calls.push(`admitted:${k.uid}`),
    sandboxStarted: (k, id) => calls.push(`sandbox:${id}`),
    containerStarted: (k, c) => calls.push(`container:${c.name}/${c.id}`),
    podTerminating: (k, grace) => calls.push(`terminating:${grace}`),
    podTerminated: (k) => calls.push(`terminated:${k.uid}`),
    podForgotten: (k) => calls.push(`forgotten:${k.uid}`),
  };
}

function kernel(clock = createFakeClock(1_000_000)): PodLifecycle {
  return new PodLifecycle({ clock, logger: pino({ level: 'silent' }) });
}

describe('pod lifecycle kernel', () => {
  it('tells every registered manager each step, in order, once each', () => {
    const lifecycle = kernel();
    const a = recorder();
    const b = recorder();
    lifecycle.register(a);
    lifecycle.register(b);
    lifecycle.admit(key);
    lifecycle.admit(key);
    lifecycle.sandboxStarted(key, 'sb1');
    lifecycle.containerStarted(key, { name: 'app', id: 'c1' });
    lifecycle.terminate(key, 30);
    lifecycle.terminate(key, 30);
    lifecycle.terminated(key);
    lifecycle.terminated(key);
    lifecycle.forget(key);
    const expected = ['admitted:u1', 'sandbox:sb1', 'container:app/c1', 'terminating:30', 'terminated:u1', 'forgotten:u1'];
    assert.deepEqual(a.calls, expected);
    assert.deepEqual(b.calls, expected);
    assert.equal(lifecycle.size(), 0);
  });

  it('never admits a UID again once it started terminating: a finished pod never starts again', () => {
    const lifecycle = kernel();
    assert.equal(lifecycle.admit(key), true);
    lifecycle.terminate(key, 5);
    assert.equal(lifecycle.admit(key), false);
    lifecycle.terminated(key);
    assert.equal(lifecycle.admit(key), false);
    assert.equal(lifecycle.get(key.uid)?.phase, 'terminated');
  });

  it('keeps the shortest grace period: a grace period can only shrink', () => {
    const lifecycle = kernel();
    assert.equal(lifecycle.terminate(key, 120), 120);
    assert.equal(lifecycle.terminate(key, 3), 3);
    assert.equal(lifecycle.terminate(key, 60), 3, 'a longer grace period later does not lengthen it');
    assert.equal(lifecycle.gracePeriodSeconds(key.uid), 3);
    assert.equal(lifecycle.terminate(key, -5), 1, 'never below 1 s, as the kubelet (a grace period of 0 still runs preStop hooks)');
    assert.equal(lifecycle.terminate(key, 0), 1);
  });

  it('stamps admittedAt, terminatingAt and terminatedAt once, from the injected clock', async () => {
    const clock = createFakeClock(1_000_000);
    const lifecycle = kernel(clock);
    lifecycle.admit(key);
    await clock.advance(1000);
    lifecycle.terminate(key, 30);
    await clock.advance(1000);
    lifecycle.terminate(key, 10);
    await clock.advance(1000);
    lifecycle.terminated(key);
    assert.deepEqual(lifecycle.get(key.uid), { key, phase: 'terminated', admittedAt: 1_000_000, terminatingAt: 1_001_000, terminatedAt: 1_003_000, gracePeriodSeconds: 10 });
  });

  it('notes once that a terminated pod was removed from the runtime, telling no manager; refuses it before termination', async () => {
    const clock = createFakeClock(1_000_000);
    const lifecycle = kernel(clock);
    const calls = recorder();
    lifecycle.register(calls);
    lifecycle.admit(key);
    lifecycle.removed(key);
    assert.equal(lifecycle.get(key.uid)?.removedAt, undefined, 'a syncing pod is never marked removed');
    lifecycle.terminate(key, 30);
    lifecycle.removed(key);
    assert.equal(lifecycle.get(key.uid)?.removedAt, undefined, 'nor a terminating one');
    lifecycle.terminated(key);
    lifecycle.removed(key);
    await clock.advance(5000);
    lifecycle.removed(key);
    assert.equal(lifecycle.get(key.uid)?.removedAt, 1_000_000);
    assert.deepEqual(calls.calls, ['admitted:u1', 'terminating:30', 'terminated:u1']);
    lifecycle.forget(key);
    assert.equal(lifecycle.get(key.uid), undefined);
  });

  it('flags a restart only on a UID it knows, in any phase, telling no manager; a flagged UID never syncs again until forgotten', () => {
    const lifecycle = kernel();
    const r = recorder();
    lifecycle.register(r);
    assert.equal(lifecycle.requestRestart(key), false, 'a first sighting: nothing to restart');
    assert.equal(lifecycle.get(key.uid), undefined);
    assert.equal(lifecycle.admit(key), true);
    assert.equal(lifecycle.requestRestart(key), true);
    assert.equal(lifecycle.requestRestart(key), true, 'idempotent');
    assert.equal(lifecycle.get(key.uid)?.phase, 'syncing', 'the reconciler, not the flag, stops the pod');
    assert.equal(lifecycle.get(key.uid)?.restartRequested, true);
    assert.equal(lifecycle.admit(key), false, 'the old run and the new one never overlap');
    lifecycle.terminate(key, 30);
    lifecycle.terminated(key);
    lifecycle.removed(key);
    assert.equal(lifecycle.get(key.uid)?.restartRequested, true, 'kept through termination and removal');
    lifecycle.forget(key);
    assert.equal(lifecycle.admit(key), true, 'a forgotten UID is admitted afresh');
    assert.equal(lifecycle.get(key.uid)?.restartRequested, undefined, 'the new run starts with no request');
    assert.deepEqual(r.calls, ['admitted:u1', 'terminating:30', 'terminated:u1', 'forgotten:u1', 'admitted:u1']);
  });

  it('flags a restart on a terminating or terminated UID too', () => {
    const lifecycle = kernel();
    lifecycle.terminate(key, 5);
    assert.equal(lifecycle.requestRestart(key), true);
    lifecycle.terminated(key);
    assert.equal(lifecycle.get(key.uid)?.restartRequested, true);
    const other: PodKey = { uid: 'u2', namespace: 'ns', name: 'other' };
    lifecycle.terminate(other, 5);
    lifecycle.terminated(other);
    assert.equal(lifecycle.requestRestart(other), true);
    assert.equal(lifecycle.get(other.uid)?.restartRequested, true);
  });

  it('forgets a pod it never saw (after an agent restart), telling every manager', () => {
    const lifecycle = kernel();
    const r = recorder();
    lifecycle.register(r);
    lifecycle.forget(key);
    assert.deepEqual(r.calls, ['forgotten:u1']);
  });

  it('treats terminated-before-terminating as a programmer error: logged, and still moves through terminating', () => {
    const lifecycle = kernel();
    const r = recorder();
    lifecycle.register(r);
    lifecycle.terminated(key);
    assert.deepEqual(r.calls, ['terminating:1', 'terminated:u1']);
  });

  it('keeps telling the other managers when one throws', () => {
    const lifecycle = kernel();
    const r = recorder();
    lifecycle.register({
      podForgotten: () => {
        throw new Error('boom');
      },
    });
    lifecycle.register(r);
    lifecycle.forget(key);
    assert.deepEqual(r.calls, ['forgotten:u1']);
  });

  it('stops telling a manager once it is unregistered', () => {
    const lifecycle = kernel();
    const r = recorder();
    const unregister = lifecycle.register(r);
    unregister();
    lifecycle.admit(key);
    assert.deepEqual(r.calls, []);
  });
});
