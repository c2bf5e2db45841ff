import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Sample } from './compare.js';
import { ratioCell, renderComparison, type ComparisonReport } from './compare-report.js';
import { BEGIN_MARKER, END_MARKER } from './report.js';

const machine = {
  date: '2026-11-24T10:00:00Z',
  cpus: 2,
  cpuModel: 'Test CPU',
  memoryGiB: 24,
  kernel: '6.1.0',
  os: 'Debian GNU/Linux 12 (bookworm)',
  node: 'v20.20.0',
  containerd: 'containerd 1.6.20',
  kubernetes: 'v1.36.3',
  nodelet: '0.1.0 (abc1234)',
};

const p50 = (target: Sample['target'], round: number, value: number): Sample => ({ measure: 'create.p50', size: 30, target, round, value });

function report(samples: Sample[], notes: string[] = []): ComparisonReport {
  return {
    machine,
    kubelet: { version: 'v1.36.3', runtime: 'containerd://1.6.20' },
    settings: { options: '--sizes 30 --rounds 3', rounds: 3, agentConcurrency: 4, rawConcurrency: 4, idleSeconds: 30, idlePods: 110, steadySeconds: 60, steadyLifeSeconds: 30, freshPods: 5 },
    samples,
    notes,
  };
}

describe('ratioCell', () => {
  it('shows the median of the per-round ratios in bold and their range', () => {
    assert.equal(ratioCell([0.8, 1.2, 0.9]), '**0.90×** (0.80–1.20)');
    assert.equal(ratioCell([1.5]), '**1.50×**');
    assert.equal(ratioCell([]), 'n/a');
  });
});

describe('renderComparison', () => {
  // Per round nodelet ÷ kubelet: 2/4, 3/2, 4/5 → median 0.80; ÷ raw: 2/1, 3/1, 4/2 → median 2.00, range 2–3.
  const samples = [p50('nodelet', 1, 2), p50('kubelet', 1, 4), p50('raw CRI', 1, 1), p50('nodelet', 2, 3), p50('kubelet', 2, 2), p50('raw CRI', 2, 1), p50('nodelet', 3, 4), p50('kubelet', 3, 5), p50('raw CRI', 3, 2)];

  it('leads with the median per-round ratios nodelet ÷ kubelet and nodelet ÷ raw CRI', () => {
    const block = renderComparison(report(samples));
    assert.match(block, /\| create → Running, p50 \| 30 \| lower \| \*\*0\.80×\*\* \(0\.50–1\.50\) \| \*\*2\.00×\*\* \(2\.00–3\.00\) \|/);
    assert.ok(block.indexOf('nodelet ÷ kubelet') < block.indexOf('min / **median** / max'), 'the ratios come before the details');
  });

  it('gives min / median / max per path, a dash for a path without the measure', () => {
    const withCpu = [...samples, { measure: 'agent.cpuPerPod', size: 30, target: 'nodelet', round: 1, value: 94.4 } as const];
    const block = renderComparison(report(withCpu));
    assert.match(block, /\| create → Running, p50 \| 30 \| s \| 2\.00 \/ \*\*3\.00\*\* \/ 4\.00 \| 2\.00 \/ \*\*4\.00\*\* \/ 5\.00 \| 1\.00 \/ \*\*1\.00\*\* \/ 2\.00 \|/);
    assert.match(block, /\| agent CPU per pod \(create \+ delete\) \| 30 \| ms \| 94 \/ \*\*94\*\* \/ 94 \| – \| – \|/);
    assert.match(block, /\| agent CPU per pod \(create \+ delete\) \| 30 \| lower \| n\/a \| n\/a \|/);
  });

  it('names the machine, both agents, the options that produced the figures, and the notes', () => {
    const block = renderComparison(report(samples, ['measured while other pods ran: 2 on node-a']));
    assert.ok(block.startsWith(BEGIN_MARKER) && block.endsWith(END_MARKER));
    assert.match(block, /nodelet 0\.1\.0 \(abc1234\), Node\.js v20\.20\.0, containerd 1\.6\.20, Kubernetes v1\.36\.3; kubelet v1\.36\.3 on containerd:\/\/1\.6\.20/);
    assert.match(block, /`npm run bench -- --sizes 30 --rounds 3`: 3 rounds/);
    assert.match(block, /- measured while other pods ran: 2 on node-a/);
  });
});
