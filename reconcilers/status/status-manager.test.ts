import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { pino } from 'pino';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { canonicalStatus, StatusManager, statusPatch, type PodStatusApi, type PodTarget } from './status-manager.js';

class FlakyApi implements PodStatusApi {
  readonly patches: Record<string, unknown>[] = [];
  readonly deletes: PodTarget[] = [];
  down = false;
  patchStatus(_t: PodTarget, body: Record<string, unknown>): Promise<void> {
    if (this.down) return Promise.reject(new Error('connect ECONNREFUSED'));
    this.patches.push(body);
    return Promise.resolve();
  }
  deletePod(t: PodTarget): Promise<void> {
    if (this.down) return Promise.reject(new Error('connect ECONNREFUSED'));
    this.deletes.push(t);
    return Promise.resolve();
  }
}

const pod: V1Pod = { metadata: { name: 'web', namespace: 'ns', uid: 'u1' }, status: { phase: 'Pending' } };
const running: V1PodStatus = { phase: 'Running', startTime: new Date('2026-01-01T00:00:00.456Z') };

function manager(api: PodStatusApi): { m: StatusManager; clock: ReturnType<typeof createFakeClock> } {
  const clock = createFakeClock();
  return { m: new StatusManager({ api, clock, logger: pino({ level: 'silent' }), retryPeriodMs: 1000 }), clock };
}

describe('StatusManager', () => {
  it('writes a new status once, with the pod UID as a precondition, and skips an identical one', async () => {
    const api = new FlakyApi();
    const { m } = manager(api);
    await m.setPodStatus(pod, running);
    await m.setPodStatus(pod, { ...running, startTime: new Date('2026-01-01T00:00:00Z') });
    assert.equal(api.patches.length, 1);
    assert.deepEqual((api.patches[0] as { metadata: unknown }).metadata, { uid: 'u1' });
  });

  it('does not write a status the API server already holds', async () => {
    const api = new FlakyApi();
    const { m } = manager(api);
    await m.setPodStatus({ ...pod, status: running }, running);
    assert.equal(api.patches.length, 0);
  });

  it('keeps a status it could not write and writes the newest one when the API server is back', async () => {
    const api = new FlakyApi();
    const { m, clock } = manager(api);
    m.start();
    api.down = true;
    await m.setPodStatus(pod, running);
    await m.setPodStatus(pod, { ...running, phase: 'Succeeded' });
    assert.equal(m.pendingCount(), 1);
    api.down = false;
    await clock.advance(1000);
    assert.equal(m.pendingCount(), 0);
    assert.equal(api.patches.length, 1);
    assert.equal((api.patches[0] as { status: { phase: string } }).status.phase, 'Succeeded');
    m.stop();
  });

  it('writes the pending final status before deleting the pod, and refuses to delete when it cannot', async () => {
    const api = new FlakyApi();
    const { m } = manager(api);
    api.down = true;
    await m.setPodStatus(pod, { phase: 'Failed' });
    await assert.rejects(m.deletePod(pod));
    assert.equal(api.deletes.length, 0);
    api.down = false;
    await m.deletePod(pod);
    assert.equal(api.patches.length, 1);
    assert.deepEqual(api.deletes, [{ namespace: 'ns', name: 'web', uid: 'u1' }]);
  });

  it('clears owned fields it no longer sets', () => {
    const patch = statusPatch('u1', { phase: 'Running' }) as { status: Record<string, unknown> };
    assert.equal(patch.status.podIP, null);
    assert.equal(patch.status.phase, 'Running');
  });

  it('compares statuses at the API server\'s one-second precision', () => {
    assert.equal(canonicalStatus({ startTime: new Date('2026-01-01T00:00:00.999Z') }), canonicalStatus({ startTime: '2026-01-01T00:00:00Z' as unknown as Date }));
  });
});
