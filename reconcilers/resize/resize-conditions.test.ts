import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { POD_RESIZE_IN_PROGRESS, POD_RESIZE_PENDING, ResizeConditions } from './resize-conditions.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

describe('ResizeConditions (the kubelet status manager resize conditions)', () => {
  it('announces a pending resize once per reason and generation; its transition time moves only with the reason', async () => {
    const clock = createFakeClock(T0);
    const c = new ResizeConditions(clock);
    assert.equal(c.setPending('u', 'Deferred', 'no room', 2), true);
    await clock.advance(5000);
    assert.equal(c.setPending('u', 'Deferred', 'no room', 2), false, 'same reason and generation: no new event');
    assert.equal(c.setPending('u', 'Deferred', 'no room', 3), true, 'a newer generation is announced');
    const [deferred] = c.conditionsOf('u');
    assert.equal(deferred?.lastTransitionTime?.getTime(), T0);
    assert.equal(deferred?.observedGeneration, 3);
    assert.deepEqual(c.deferred(), ['u']);
    await clock.advance(5000);
    c.setPending('u', 'Infeasible', 'never', 3);
    assert.equal(c.conditionsOf('u')[0]?.lastTransitionTime?.getTime(), T0 + 10_000);
    assert.deepEqual(c.deferred(), []);
    c.clearPending('u');
    assert.deepEqual(c.conditionsOf('u'), []);
  });

  it('keeps the in-progress generation and error until cleared, and returns it when cleared', () => {
    const c = new ResizeConditions(createFakeClock(T0));
    assert.deepEqual(c.setInProgress('u', 2), { generation: 2, changed: true });
    assert.deepEqual(c.setInProgress('u', 3), { generation: 2, changed: false }, 'the generation it was set with stays');
    assert.deepEqual(c.setInProgress('u', 3, { reason: 'Error', message: 'boom' }), { generation: 2, changed: true });
    assert.deepEqual(c.setInProgress('u', 3), { generation: 2, changed: false }, 'the error is kept');
    const [cond] = c.conditionsOf('u');
    assert.deepEqual({ type: cond?.type, reason: cond?.reason, message: cond?.message, status: cond?.status }, { type: POD_RESIZE_IN_PROGRESS, reason: 'Error', message: 'boom', status: 'True' });
    assert.equal(c.clearInProgress('u'), 2);
    assert.equal(c.clearInProgress('u'), undefined);
  });

  it('takes the conditions from the API status on first sight (an agent restart), and only then', () => {
    const c = new ResizeConditions(createFakeClock(T0));
    const at = new Date(T0 - 60_000);
    const pending = { type: POD_RESIZE_PENDING, status: 'True', reason: 'Deferred', message: 'no room', observedGeneration: 4, lastTransitionTime: at };
    c.backfill({ metadata: { uid: 'u' }, status: { conditions: [{ type: 'Ready', status: 'True' }, pending] } });
    assert.deepEqual(c.conditionsOf('u'), [pending]);
    assert.equal(c.setPending('u', 'Deferred', 'no room', 4), false, 'not announced again after a restart');
    c.backfill({ metadata: { uid: 'u' }, status: { conditions: [] } });
    assert.equal(c.conditionsOf('u').length, 1, 'a later backfill does not override what the agent keeps');
  });
});
