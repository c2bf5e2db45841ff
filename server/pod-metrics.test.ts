import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { MetricsRegistry } from '../util/metrics.js';
import { podFlowMetrics, resourceConfigMode, watchPodCounts, type PodCountsView, type WorkingPod } from './pod-metrics.js';

function pod(uid: string, opts: { static?: boolean; phase?: string; ephemeral?: number } = {}): V1Pod {
  return {
    metadata: { uid, name: uid, namespace: 'default', annotations: opts.static === true ? { 'kubernetes.io/config.source': 'file' } : {} },
    spec: { containers: [{ name: 'c' }], ...(opts.ephemeral === undefined ? {} : { ephemeralContainers: Array.from({ length: opts.ephemeral }, (_, i) => ({ name: `e${String(i)}` })) }) },
    status: { phase: opts.phase ?? 'Running' },
  };
}

function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('pod counts on /metrics', () => {
  it('counts desired, active, mirror and working pods, ephemeral containers and resizes as the kubelet’s housekeeping does', async () => {
    const state: { desired: V1Pod[]; working: WorkingPod[] } = {
      desired: [pod('a', { ephemeral: 2 }), pod('b', { phase: 'Succeeded' }), pod('s', { static: true }), pod('t', { static: true })],
      working: [
        { uid: 'a', phase: 'syncing', admitted: true },
        { uid: 'b', phase: 'terminated', admitted: true },
        { uid: 's', phase: 'syncing', admitted: true },
        { uid: 't', phase: 'terminating', admitted: true },
        { uid: 'gone', phase: 'terminating', admitted: true },
        { uid: 'orphan', phase: 'terminating', admitted: false },
      ],
    };
    const view: PodCountsView = {
      desired: () => state.desired,
      isStatic: (p) => p.metadata?.annotations?.['kubernetes.io/config.source'] === 'file',
      hasMirror: (p) => p.metadata?.uid === 's',
      working: () => state.working,
      resizesInProgress: () => 1,
    };
    const registry = new MetricsRegistry();
    watchPodCounts(registry, view);
    let text = await registry.expose();
    assert.equal(value(text, 'kubelet_desired_pods{static=""}'), 2);
    assert.equal(value(text, 'kubelet_desired_pods{static="true"}'), 2);
    assert.equal(value(text, 'kubelet_active_pods{static=""}'), 1, 'the Succeeded pod is not active');
    assert.equal(value(text, 'kubelet_active_pods{static="true"}'), 2);
    assert.equal(value(text, 'kubelet_mirror_pods'), 1);
    assert.equal(value(text, 'kubelet_managed_ephemeral_containers'), 2);
    assert.equal(value(text, 'kubelet_pod_in_progress_resizes'), 1);
    assert.equal(value(text, 'kubelet_working_pods{config="desired",lifecycle="sync",static=""}'), 1);
    assert.equal(value(text, 'kubelet_working_pods{config="desired",lifecycle="terminated",static=""}'), 1);
    assert.equal(value(text, 'kubelet_working_pods{config="desired",lifecycle="terminating",static="true"}'), 1);
    assert.equal(value(text, 'kubelet_working_pods{config="orphan",lifecycle="terminating",static=""}'), 1);
    assert.equal(value(text, 'kubelet_working_pods{config="runtime_only",lifecycle="terminating",static="unknown"}'), 1);
    assert.equal(value(text, 'kubelet_working_pods{config="runtime_only",lifecycle="sync",static="unknown"}'), 0, 'every combination present, at 0');
    assert.equal(text.split('\n').filter((l) => l.startsWith('kubelet_working_pods{')).length, 15);
    // The static pod leaves its source while still terminating: an orphan, still static.
    state.desired = state.desired.filter((p) => p.metadata?.uid !== 't');
    text = await registry.expose();
    assert.equal(value(text, 'kubelet_working_pods{config="orphan",lifecycle="terminating",static="true"}'), 1);
    assert.equal(value(text, 'kubelet_desired_pods{static="true"}'), 1);
  });

  it('classifies a pod’s resource configuration as the kubelet’s admission metric does', () => {
    const c = (resources?: object): NonNullable<V1Pod['spec']> => ({ containers: [{ name: 'c', ...(resources === undefined ? {} : { resources }) }] });
    assert.equal(resourceConfigMode({ spec: c() }), '');
    assert.equal(resourceConfigMode({ spec: c({ requests: { cpu: '1' } }) }), 'container_level');
    assert.equal(resourceConfigMode({ spec: { ...c(), resources: { limits: { memory: '1Gi' } } } }), 'pod_level');
    assert.equal(resourceConfigMode({ spec: { ...c({ limits: { cpu: '1' } }), resources: { requests: { cpu: '1' } } } }), 'pod_and_container_level');
    assert.equal(resourceConfigMode({ spec: { ...c(), resources: { requests: { 'example.com/gpu': '1' } } } }), '', 'only CPU, memory and hugepages are pod-level resources');
  });

  it('counts restarted pods by static as the kubelet, both series written from the start', () => {
    const registry = new MetricsRegistry();
    const flows = podFlowMetrics(registry);
    assert.equal(value(registry.text(), 'kubelet_restarted_pods_total{static="true"}'), 0);
    assert.equal(value(registry.text(), 'kubelet_restarted_pods_total{static=""}'), 0);
    flows.podRestarted(true);
    flows.podRestarted(true);
    flows.podRestarted(false);
    assert.equal(value(registry.text(), 'kubelet_restarted_pods_total{static="true"}'), 2);
    assert.equal(value(registry.text(), 'kubelet_restarted_pods_total{static=""}'), 1);
    assert.match(registry.text(), /# TYPE kubelet_restarted_pods_total counter/);
  });
});
