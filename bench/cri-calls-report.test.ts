import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { callsBetween, criCallCounts, renderCriCalls, type CriCallsSample } from './cri-calls-report.js';
import type { MachineInfo } from './machine.js';

describe('CRI calls per pod', () => {
  it("reads each operation's running total from an agent's metrics, summing label sets that split it further", () => {
    const exposition = [
      '# HELP kubelet_runtime_operations_total Cumulative number of runtime operations by operation type.',
      '# TYPE kubelet_runtime_operations_total counter',
      'kubelet_runtime_operations_total{operation_type="list_containers"} 40',
      'kubelet_runtime_operations_total{operation_type="run_podsandbox"} 3',
      'kubelet_runtime_operations_total{code="x",operation_type="run_podsandbox"} 2',
      'kubelet_runtime_operations_errors_total{operation_type="run_podsandbox"} 7',
      'kubelet_runtime_operations_total 9',
    ].join('\n');
    assert.deepEqual([...criCallCounts(exposition)].sort(), [['list_containers', 40], ['run_podsandbox', 5]]);
  });

  it('counts the calls between two readings, an operation first seen in the second from 0', () => {
    const calls = callsBetween(new Map([['list_containers', 40], ['status', 5]]), new Map([['list_containers', 70], ['status', 5], ['run_podsandbox', 30]]));
    assert.deepEqual([...calls].sort(), [['list_containers', 30], ['run_podsandbox', 30]]);
  });

  it('renders per pod by operation for each agent, all operations, and nodelet ÷ the kubelet per round', () => {
    const info = { date: 'D', cpus: 2, cpuModel: 'M', memoryGiB: 1, kernel: 'K', os: 'O', node: 'N', containerd: 'C', kubernetes: 'V', nodelet: 'X' } satisfies MachineInfo;
    const sample = (target: CriCallsSample['target'], round: number, calls: [string, number][]): CriCallsSample => ({ target, round, pods: 10, windowSeconds: round, calls: new Map(calls) });
    const samples = [
      sample('nodelet', 1, [['run_podsandbox', 10], ['podsandbox_status', 20]]),
      sample('kubelet', 1, [['run_podsandbox', 10], ['podsandbox_status', 40]]),
      sample('nodelet', 2, [['run_podsandbox', 10], ['podsandbox_status', 10]]),
      sample('kubelet', 2, [['run_podsandbox', 10], ['podsandbox_status', 40], ['version', 1]]),
    ];
    const lines = renderCriCalls({ machine: info, command: 'npm run bench:cri-calls', samples }).split('\n');
    assert.ok(lines.includes('### 10 pods'));
    assert.ok(lines.includes('| podsandbox_status | 1.00 / 1.50 / 2.00 | 4.00 / 4.00 / 4.00 | **0.38×** (0.25–0.50) |'), 'per-round ratios 0.5 and 0.25');
    assert.ok(lines.includes('| run_podsandbox | 1.00 / 1.00 / 1.00 | 1.00 / 1.00 / 1.00 | **1.00×** (1.00–1.00) |'));
    assert.ok(lines.includes('| version | 0.00 / 0.00 / 0.00 | 0.00 / 0.05 / 0.10 | **0.00×** (0.00–0.00) |'), 'an operation one agent never called counts 0 for it; round 1 has no kubelet value to divide by');
    assert.ok(lines.includes('| **all operations** | 2.00 / 2.50 / 3.00 | 5.00 / 5.05 / 5.10 | **0.50×** (0.39–0.60) |'));
    assert.ok(lines.includes('| the window, s | 1.00 / 1.50 / 2.00 | 1.00 / 1.50 / 2.00 | |'));
  });
});
