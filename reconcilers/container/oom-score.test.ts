import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { containerOomScoreAdj } from './oom-score.js';

const GiB = 2 ** 30;
const c = (name: string, requests?: Record<string, string>, limits?: Record<string, string>): V1Container => ({ name, image: 'busybox', resources: { ...(requests === undefined ? {} : { requests }), ...(limits === undefined ? {} : { limits }) } });
const pod = (containers: V1Container[], extra: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod => ({ metadata: { name: 'p', uid: 'u' }, spec: { containers, ...extra } });

describe('containerOomScoreAdj (the kubelet qos policy)', () => {
  it('gives Guaranteed -997 and BestEffort 1000', () => {
    const guaranteed = c('g', { cpu: '1', memory: '1Gi' }, { cpu: '1', memory: '1Gi' });
    assert.equal(containerOomScoreAdj(pod([guaranteed]), guaranteed, 16 * GiB), -997);
    const bestEffort = c('b');
    assert.equal(containerOomScoreAdj(pod([bestEffort]), bestEffort, 16 * GiB), 1000);
  });

  it('scores Burstable by the share of node memory requested, within 3..999', () => {
    const quarter = c('q', { memory: '4Gi' });
    assert.equal(containerOomScoreAdj(pod([quarter]), quarter, 16 * GiB), 750);
    const oneGi = c('o', { memory: '1Gi' });
    assert.equal(containerOomScoreAdj(pod([oneGi]), oneGi, 16 * GiB), 938, '1000 - trunc(62.5)');
    const everything = c('e', { memory: '16Gi' });
    assert.equal(containerOomScoreAdj(pod([everything]), everything, 16 * GiB), 3);
    const cpuOnly = c('cpu', { cpu: '100m' });
    assert.equal(containerOomScoreAdj(pod([cpuOnly]), cpuOnly, 16 * GiB), 999, 'no memory request: 1000 would tie with BestEffort');
  });

  it('never makes a sidecar easier to kill than the regular container requesting least', () => {
    const sidecar: V1Container = { ...c('proxy', { memory: '128Mi' }), restartPolicy: 'Always' };
    const app = c('app', { memory: '4Gi' });
    const p = pod([app], { initContainers: [sidecar] });
    assert.equal(containerOomScoreAdj(p, app, 16 * GiB), 750);
    assert.equal(containerOomScoreAdj(p, sidecar, 16 * GiB), 750);
    const plainInit = c('setup', { memory: '128Mi' });
    assert.equal(containerOomScoreAdj(pod([app], { initContainers: [plainInit] }), plainInit, 16 * GiB), 993);
  });

  it('protects a system-node-critical pod like a Guaranteed one', () => {
    const agent = c('agent', { memory: '64Mi' });
    assert.equal(containerOomScoreAdj(pod([agent], { priorityClassName: 'system-node-critical', priority: 2_000_001_000 }), agent, 16 * GiB), -997);
    assert.equal(containerOomScoreAdj(pod([agent], { priorityClassName: 'system-node-critical', priority: 0 }), agent, 16 * GiB), 997, 'not critical without the priority');
  });
});
