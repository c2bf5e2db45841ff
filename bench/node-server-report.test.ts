import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MachineInfo } from './machine.js';
import { SERVER_BEGIN_MARKER, SERVER_END_MARKER, ratios, renderServerResults, type LogPath, type Sample } from './node-server-report.js';
import { spreadText } from './compare.js';

const s = <V extends string>(variant: V, round: number, value: number): Sample<V> => ({ variant, round, value });

describe('node-server bench report', () => {
  it('pairs variants by round (a round missing one is left out) and reports min / median / max', () => {
    const logs: Sample<LogPath>[] = [s('file read', 1, 400), s('node server', 1, 100), s('node server', 2, 150), s('file read', 2, 300), s('node server', 3, 80)];
    assert.deepEqual(ratios(logs, 'node server', 'file read'), [0.25, 0.5]);
    assert.equal(spreadText([3, 1, 2], 2), '1.00 / 2.00 / 3.00');
    assert.equal(spreadText([]), 'n/a');
  });

  it('renders the headline ratios and the RSS difference per round', () => {
    const machine = { date: 'd', cpus: 2, cpuModel: 'cpu', memoryGiB: 1, kernel: 'k', os: 'os', node: 'v20', containerd: 'c', kubernetes: 'k8s', nodelet: 'n' } as MachineInfo;
    const block = renderServerResults({
      machine,
      logBytes: 8 * 2 ** 20,
      execRepeats: 5,
      followers: 50,
      logs: [s('file read', 1, 400), s('crictl logs', 1, 50), s('node server', 1, 100), s('API server proxy', 1, 50)],
      exec: [s('crictl exec', 1, 100), s('kubectl exec', 1, 250)],
      rss: [s('idle', 1, 120), s('followers', 1, 130)],
    });
    assert.ok(block.startsWith(SERVER_BEGIN_MARKER) && block.endsWith(SERVER_END_MARKER));
    assert.match(block, /node server ÷ file read: 0\.25 \/ 0\.25 \/ 0\.25; API server proxy ÷ node server: 0\.50/);
    assert.match(block, /kubectl exec ÷ crictl exec: 2\.50/);
    assert.match(block, /with 50 followers − idle: 10\.0 \/ 10\.0 \/ 10\.0 MiB/);
    assert.match(block, /Log of 8\.0 MiB/);
  });
});
