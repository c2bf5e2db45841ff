import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { evictionMessage, formatBinaryQuantity, rankForEviction, type PodUsage } from './ranking.js';
import type { Threshold } from './thresholds.js';

const Mi = 2 ** 20;

function pod(name: string, options: { memoryRequest?: string; priority?: number } = {}): V1Pod {
  const resources = options.memoryRequest === undefined ? {} : { resources: { requests: { memory: options.memoryRequest }, limits: { memory: options.memoryRequest } } };
  return { metadata: { name, namespace: 'ns', uid: name }, spec: { containers: [{ name: 'main', ...resources }], ...(options.priority === undefined ? {} : { priority: options.priority }) } };
}

const usage = (p: V1Pod, memoryBytes: number, disk = 0, volumeBytes = 0): PodUsage => ({ pod: p, containers: [{ name: 'main', memoryWorkingSetBytes: memoryBytes, diskBytes: disk }], volumeBytes });
const names = (ranked: readonly PodUsage[]): string[] => ranked.map((u) => u.pod.metadata?.name ?? '');

describe('eviction ranking', () => {
  it('memory: pods over their requests first, then lower priority, then usage above requests', () => {
    const guaranteed = usage(pod('guaranteed', { memoryRequest: '512Mi' }), 100 * Mi);
    const small = usage(pod('small'), 10 * Mi);
    const hungry = usage(pod('hungry'), 300 * Mi);
    const important = usage(pod('important', { priority: 1000 }), 900 * Mi);
    assert.deepEqual(names(rankForEviction('memory.available', [guaranteed, important, small, hungry])), ['hungry', 'small', 'important', 'guaranteed']);
  });

  it('disk: local storage (writable layers and emptyDirs) above requests', () => {
    const filler = usage(pod('filler'), 0, 4096, 600 * Mi);
    const quiet = usage(pod('quiet'), 0, 8192, 0);
    assert.deepEqual(names(rankForEviction('nodefs.available', [quiet, filler])), ['filler', 'quiet']);
  });

  it('PIDs: lower priority, then more processes', () => {
    const many = { ...usage(pod('many'), 0), processes: 500 };
    const few = { ...usage(pod('few'), 0), processes: 5 };
    const high = { ...usage(pod('high', { priority: 10 }), 0), processes: 900 };
    assert.deepEqual(names(rankForEviction('pid.available', [high, few, many])), ['many', 'few', 'high']);
  });

  it("words the message as the kubelet's evictionMessage", () => {
    const hard: Threshold = { signal: 'memory.available', value: { quantity: 100 * Mi, text: '100Mi' }, gracePeriodMs: 0 };
    const message = evictionMessage(hard, { available: 80 * Mi, capacity: 8192 * Mi }, usage(pod('hungry'), 300 * Mi));
    assert.equal(message, 'The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. Container main was using 300Mi, request is 0, has larger consumption of memory. ');
    const within = evictionMessage(hard, { available: 80 * Mi, capacity: 8192 * Mi }, usage(pod('g', { memoryRequest: '512Mi' }), 100 * Mi));
    assert.equal(within, 'The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. ');
    const percent: Threshold = { signal: 'nodefs.available', value: { percentage: 0.1, text: '10%' }, gracePeriodMs: 0 };
    assert.equal(evictionMessage(percent, { available: 1000 * Mi, capacity: 20480 * Mi }, usage(pod('f'), 0, 8192)), 'The node was low on resource: ephemeral-storage. Threshold quantity: 2Gi, available: 1000Mi. Container main was using 8Ki, request is 0, has larger consumption of ephemeral-storage. ');
  });

  it('prints a binary threshold canonically and a decimal one as written', () => {
    const at = (text: string, quantity: number): string => evictionMessage({ signal: 'memory.available', value: { quantity, text }, gracePeriodMs: 0 }, { available: 0, capacity: 1 }, { pod: pod('p'), containers: [], volumeBytes: 0 });
    assert.equal(at('1024Mi', 2 ** 30), 'The node was low on resource: memory. Threshold quantity: 1Gi, available: 0. ');
    assert.equal(at('500M', 5e8), 'The node was low on resource: memory. Threshold quantity: 500M, available: 0. ');
  });

  it('prints byte counts as binary-SI quantities', () => {
    assert.deepEqual([0, 1000, 1024, 300 * Mi, 300 * Mi + 1024, 2 ** 30].map(formatBinaryQuantity), ['0', '1000', '1Ki', '300Mi', '307201Ki', '1Gi']);
  });
});
