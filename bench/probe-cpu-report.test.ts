import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MachineInfo } from './machine.js';
import { PROBE_BEGIN_MARKER, PROBE_END_MARKER, cpuPercent, renderProbeResults, roundRatios, type ProbeSample } from './probe-cpu-report.js';
import { updateDocument } from './report.js';
import { spreadText } from './compare.js';

const sample = (variant: ProbeSample['variant'], round: number, cpuSeconds: number): ProbeSample => ({
  variant, round, cpuSeconds, windowSeconds: 60, peakRssBytes: 100 * 2 ** 20, readyAtStart: 110, readyAtEnd: 110,
});

describe('probe-cpu report', () => {
  it('pairs the variants by round, as ratios with probes ÷ without', () => {
    const samples = [sample('no probes', 1, 3), sample('probes', 1, 6), sample('probes', 2, 9), sample('no probes', 2, 3), sample('probes', 3, 1)];
    assert.deepEqual(roundRatios(samples), [2, 3]);
    assert.equal(cpuPercent(sample('probes', 1, 6)), 10);
  });

  it('reports min / median / max', () => {
    assert.equal(spreadText([3, 1, 2]), '1.0 / 2.0 / 3.0');
    assert.equal(spreadText([]), 'n/a');
  });

  it('renders a block that replaces its own markers only', () => {
    const machine = { date: 'd', cpus: 2, cpuModel: 'cpu', memoryGiB: 1, kernel: 'k', os: 'os', node: 'v20', containerd: 'c', kubernetes: 'k8s', nodelet: 'n' } as MachineInfo;
    const block = renderProbeResults({ machine, pods: 110, periodSeconds: 1, samples: [sample('no probes', 1, 3), sample('probes', 1, 6)] });
    assert.ok(block.startsWith(PROBE_BEGIN_MARKER) && block.endsWith(PROBE_END_MARKER));
    assert.match(block, /Agent CPU with probes ÷ without: 2\.0 \/ 2\.0 \/ 2\.0/);
    assert.match(block, /220 probes\/s/);
    const doc = `intro\n${PROBE_BEGIN_MARKER}\nold\n${PROBE_END_MARKER}\ntail\n`;
    assert.equal(updateDocument(doc, 'NEW', { begin: PROBE_BEGIN_MARKER, end: PROBE_END_MARKER }), 'intro\nNEW\ntail\n');
  });
});
