import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { exitAtUptime, histogramTotals, sleepUntilUptimeScript, slowestExits } from './status-freshness.js';

describe('status freshness exit times', () => {
  it('are a relist period apart plus an even share of it, so the exits meet the relist at evenly spread phases', () => {
    for (const period of [1, 1.009]) {
      const times = Array.from({ length: 5 }, (_, i) => exitAtUptime(100, i, 5, period));
      const phases = times.map((t) => ((t - 100) % period) / period);
      assert.deepEqual(phases.map((p) => p.toFixed(3)), ['0.000', '0.200', '0.400', '0.600', '0.800'], `period ${period}`);
    }
  });

  it('name the slowest exits first, with their delay and the runtime\'s exit time', () => {
    const exits = new Map([['fresh-0', Date.UTC(2026, 11, 7, 3, 48, 0)], ['fresh-1', Date.UTC(2026, 11, 7, 3, 48, 1, 500)], ['fresh-2', Date.UTC(2026, 11, 7, 3, 48, 2)]]);
    assert.equal(
      slowestExits(['fresh-0', 'fresh-1', 'fresh-2'], [120.4, 5020.6, 190], exits, 2),
      'fresh-1 5021 ms (exited 2026-12-07T03:48:01.500Z), fresh-2 190 ms (exited 2026-12-07T03:48:02.000Z)',
    );
  });

  it('read a histogram\'s sum and count from a metrics exposition', () => {
    const text = [
      '# TYPE kubelet_pleg_relist_interval_seconds histogram',
      'kubelet_pleg_relist_interval_seconds_bucket{le="+Inf"} 782',
      'kubelet_pleg_relist_interval_seconds_sum 789.1902744359998',
      'kubelet_pleg_relist_interval_seconds_count 782',
      'kubelet_pleg_relist_duration_seconds_sum 6.5',
    ].join('\n');
    assert.deepEqual(histogramTotals(text, 'kubelet_pleg_relist_interval_seconds'), { sum: 789.1902744359998, count: 782 });
    assert.equal(histogramTotals(text, 'kubelet_pleg_relist_duration_seconds'), undefined);
  });

  it('sleep until the planned uptime, and not at all once it has passed', () => {
    const uptime = (): number => Number.parseFloat(readFileSync('/proc/uptime', 'utf8').split(' ')[0] ?? '');
    const target = uptime() + 0.6;
    execFileSync('sh', ['-c', sleepUntilUptimeScript(target)]);
    const after = uptime();
    assert.ok(after >= target - 0.011, `woke at ${after}, before ${target}`);
    assert.ok(after < target + 0.3, `woke at ${after}, long after ${target}`);
    const started = Date.now();
    execFileSync('sh', ['-c', sleepUntilUptimeScript(target - 5)]);
    assert.ok(Date.now() - started < 300, 'slept though the point had passed');
  });
});
