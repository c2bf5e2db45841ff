import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { agentCounters, renderCostSummary, type CostSample } from './agent-cost-report.js';
import { median } from './compare.js';

function sample(label: string, count: number, cpuSeconds: number, peakRssMiB: number): CostSample {
  return { label, count, round: 1, cpuSeconds, cpuSecondsCreate: cpuSeconds / 2, peakRssMiB, rssBeforeMiB: 100, createP50Ms: 2000, throughputPerSec: 5, deleteAllGoneMs: 3000 };
}

describe('agent-cost report', () => {
  it('takes the middle value, or the mean of the middle two', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 3, 2]), 2.5);
    assert.ok(Number.isNaN(median([])));
  });

  it('summarizes each label and size apart, as min / median / max, with the median CPU per pod', () => {
    const table = renderCostSummary([
      sample('A', 30, 3, 200),
      sample('B', 30, 2, 150),
      sample('A', 30, 5, 210),
      sample('A', 30, 4, 190),
      sample('A', 110, 11, 220),
    ]);
    const rows = table.split('\n').filter((l) => l.startsWith('| A') || l.startsWith('| B'));
    assert.deepEqual(rows.map((r) => `${r.split('|')[1]!.trim()} ${r.split('|')[2]!.trim()}`), ['A 30', 'B 30', 'A 110']);
    // A at 30: three runs, CPU 3 / 4 / 5 s, 4 s median over 30 pods = 133 ms per pod; RSS 190 / 200 / 210.
    assert.match(rows[0]!, /\| A \| 30 \| 3 \| 3\.00 \/ 4\.00 \/ 5\.00 \| 133 \| 190 \/ 200 \/ 210 \|/);
    assert.match(rows[2]!, /\| A \| 110 \| 1 \| 11\.00 \/ 11\.00 \/ 11\.00 \| 100 \|/);
    assert.match(rows[0]!, /\| – \| – \|$/, 'lines without the per-pod counts show none');
  });

  it('sums the reconcile and CRI call counters over their label sets, nothing else', () => {
    const exposition = [
      '# TYPE nodelet_reconcile_job_duration_seconds histogram',
      'nodelet_reconcile_job_duration_seconds_bucket{outcome="success",le="+Inf"} 120',
      'nodelet_reconcile_job_duration_seconds_count{outcome="success"} 120',
      'nodelet_reconcile_job_duration_seconds_count{outcome="error"} 5',
      'kubelet_runtime_operations_total{operation_type="list_containers"} 200',
      'kubelet_runtime_operations_total{operation_type="run_podsandbox"} 30',
      'kubelet_runtime_operations_errors_total{operation_type="run_podsandbox"} 2',
    ].join('\n');
    assert.deepEqual(agentCounters(exposition), { reconciles: 125, criCalls: 230 });
  });

  it('adds the reconciles and CRI calls per pod where the lines have them', () => {
    const table = renderCostSummary([
      { ...sample('A', 30, 3, 200), reconcilesPerPod: 4.2, criCallsPerPod: 31 },
      { ...sample('A', 30, 3, 200), reconcilesPerPod: 3.3, criCallsPerPod: 24.5 },
      sample('A', 30, 3, 200),
    ]);
    const row = table.split('\n').find((l) => l.startsWith('| A'));
    assert.match(row ?? '', /\| 3\.3 \/ 3\.8 \/ 4\.2 \| 24\.5 \/ 27\.8 \/ 31\.0 \|$/);
  });
});
