import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BEGIN_MARKER, DEFAULT_INTRO, END_MARKER, renderResults, updateDocument, type BenchReport } from './report.js';
import { summarize } from './stats.js';

const report: BenchReport = {
  machine: {
    date: '2026-11-22T10:00:00Z',
    cpus: 2,
    cpuModel: 'Test CPU',
    memoryGiB: 24,
    kernel: '6.1.0',
    os: 'Debian GNU/Linux 12 (bookworm)',
    node: 'v20.20.0',
    containerd: 'containerd 1.6.20',
    kubernetes: 'v1.36.3',
    nodelet: '0.1.0 (abc1234)',
  },
  agentConcurrency: 4,
  otherPods: 0,
  sizes: [
    {
      count: 2,
      nodelet: {
        count: 2,
        create: summarize([2000, 4000]),
        deleteApi: summarize([1000, 3000]),
        deleteAllGoneMs: 3500,
        cpuSecondsCreate: 0.5,
        cpuSecondsDelete: 0.3,
        peakRssBytes: 200 * 2 ** 20,
        rssBeforeBytes: 150 * 2 ** 20,
      },
      rawBounded: { count: 2, concurrency: 4, create: summarize([1000, 2000]), teardownMs: 800 },
      rawUnbounded: { count: 2, concurrency: undefined, create: summarize([500, 1000]), teardownMs: 600 },
    },
  ],
};

describe('renderResults', () => {
  it('leads with the nodelet ÷ raw CRI ratios for p50 and throughput', () => {
    const block = renderResults(report);
    // p50: nodelet 2 s, raw 1 s → 2×; throughput: 2 pods in 4 s vs 2 pods in 2 s → 0.5×.
    assert.match(block, /\| 2 \| \*\*2\.00×\*\* \(2\.00 s vs 1\.00 s\) \| \*\*0\.50×\*\* \(0\.5 pods\/s vs 1\.0 pods\/s\) \| 4\.00× \| 0\.25× \|/);
  });

  it('names the machine and the versions, and the agent’s CPU per pod and peak RSS', () => {
    const block = renderResults(report);
    assert.match(block, /2 × Test CPU, 24 GiB, Debian GNU\/Linux 12 \(bookworm\), kernel 6\.1\.0/);
    assert.match(block, /nodelet 0\.1\.0 \(abc1234\), Node\.js v20\.20\.0, containerd 1\.6\.20, Kubernetes v1\.36\.3/);
    assert.match(block, /\| 2 \| 0\.50 \| 0\.30 \| 400 \| 150 MiB \| 200 MiB \|/);
  });
});

describe('updateDocument', () => {
  const block = `${BEGIN_MARKER}\nnew results\n${END_MARKER}`;

  it('writes the default intro above the results when there is no document', () => {
    assert.equal(updateDocument(undefined, block), `${DEFAULT_INTRO}\n${block}\n`);
  });

  it('replaces only the block between the markers, keeping the prose around it', () => {
    const doc = `# Benchmarks\n\nhand-written intro\n\n${BEGIN_MARKER}\nold results\n${END_MARKER}\n\nfooter\n`;
    assert.equal(updateDocument(doc, block), `# Benchmarks\n\nhand-written intro\n\n${block}\n\nfooter\n`);
  });

  it('appends the block to a document without markers', () => {
    assert.equal(updateDocument('# Benchmarks\n\nintro\n', block), `# Benchmarks\n\nintro\n\n${block}\n`);
  });
});
