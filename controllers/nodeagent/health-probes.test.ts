import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { createHealthSampler, type AgentProbes } from './health-probes.js';

const clock = createFakeClock(Date.parse('2030-01-01T00:00:00Z'));

function pod(phase: string | undefined): V1Pod {
  return { metadata: { name: phase ?? 'new' }, status: phase === undefined ? undefined : { phase } };
}

function probes(overrides: Partial<AgentProbes> = {}): AgentProbes {
  return {
    runtimeReadiness: () => Promise.resolve({ ready: true, reason: '', message: '' }),
    runtimeVersion: () => 'containerd://1.6.20',
    queueCounts: () => Promise.resolve({ waiting: 1, active: 2, delayed: 3, failed: 4 }),
    pods: () => [pod(undefined), pod('Pending'), pod('Running'), pod('Succeeded'), pod('Failed')],
    podSourceHealthy: () => true,
    nodeHealthy: () => true,
    lastRelistMs: () => 1234,
    clock,
    ...overrides,
  };
}

describe('createHealthSampler', () => {
  it('samples a healthy agent, counting only pods not in a terminal phase', async () => {
    const sample = await createHealthSampler(probes())();
    assert.equal(sample.runtime.ready, true);
    assert.equal(sample.queue.ready, true);
    assert.equal(sample.api.ready, true);
    assert.equal(sample.pods, 3);
    assert.deepEqual(sample.queueCounts, { waiting: 1, active: 2, delayed: 3, failed: 4 });
    assert.equal(sample.runtimeVersion, 'containerd://1.6.20');
    assert.equal(sample.lastRelistMs, 1234);
  });

  it('describes a failing runtime and an unreachable Redis instead of throwing', async () => {
    const sample = await createHealthSampler(
      probes({ runtimeReadiness: () => Promise.reject(new Error('socket gone')), queueCounts: () => Promise.reject(new Error('ECONNREFUSED')) }),
    )();
    assert.deepEqual(sample.runtime, { ready: false, reason: 'RuntimeUnavailable', message: 'socket gone' });
    assert.deepEqual(sample.queue, { ready: false, reason: 'RedisUnavailable', message: 'ECONNREFUSED' });
    assert.equal(sample.queueCounts, undefined);
  });

  it('gives up on a probe that hangs after the timeout', async () => {
    const fake = createFakeClock();
    const sampling = createHealthSampler(probes({ clock: fake, timeoutMs: 1000, queueCounts: () => new Promise(() => undefined) }))();
    await fake.advance(1000);
    const sample = await sampling;
    assert.equal(sample.queue.reason, 'RedisUnavailable');
    assert.match(sample.queue.message, /Redis did not answer within 1000 ms/);
    assert.equal(fake.pendingTimers(), 0);
  });

  it('reports the pod watch before the node heartbeat when the API side is not current', async () => {
    assert.equal((await createHealthSampler(probes({ podSourceHealthy: () => false, nodeHealthy: () => false }))()).api.reason, 'PodWatchNotHealthy');
    assert.equal((await createHealthSampler(probes({ nodeHealthy: () => false }))()).api.reason, 'NodeStatusStale');
  });
});
