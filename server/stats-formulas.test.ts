/** The stats formulas on plain data: parsers, working set, CPU rate from two readings, statfs. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { apiTime, fsFigures, parseKeyValues, parseMeminfo, parseProcStat, usageNanoCores, workingSetBytes } from './stats-formulas.js';

describe('stats formulas', () => {
  it('parses memory.stat and meminfo (kB to bytes)', () => {
    const stat = parseKeyValues('rss 10\ntotal_inactive_file 4096\nbad line here\n');
    assert.equal(stat.get('rss'), 10n);
    assert.equal(stat.get('total_inactive_file'), 4096n);
    assert.equal(stat.size, 2);
    const mem = parseMeminfo('MemTotal:       16 kB\nMemFree:  4 kB\nHugePages_Total:       0\n');
    assert.equal(mem.get('MemTotal'), 16384n);
    assert.equal(mem.get('MemFree'), 4096n);
    assert.equal(mem.get('HugePages_Total'), 0n);
  });

  it('/proc/stat: busy = user+nice+system+irq+softirq+steal (not idle, iowait), at USER_HZ; btime', () => {
    const parsed = parseProcStat('cpu  1 2 3 1000 2000 4 5 6 0 0\ncpu0 1 2 3 4 5 6 7 8\nbtime 1700000000\n');
    assert.equal(parsed.busyNanoSeconds, 21n * 10_000_000n);
    assert.equal(parsed.bootTimeSeconds, 1_700_000_000);
  });

  it('working set is usage less inactive file, never negative', () => {
    assert.equal(workingSetBytes(1000n, 300n), 700n);
    assert.equal(workingSetBytes(100n, 300n), 0n);
  });

  it('nanocores from two readings; none without an earlier one, after a reset, or with no time passed', () => {
    const first = { timestamp: 1_000_000_000n, usageCoreNanoSeconds: 5_000_000_000n };
    // 0.5 s of CPU over 2 s = a quarter core.
    assert.equal(usageNanoCores(first, { timestamp: 3_000_000_000n, usageCoreNanoSeconds: 5_500_000_000n }), 250_000_000n);
    assert.equal(usageNanoCores(undefined, first), undefined);
    assert.equal(usageNanoCores(first, { timestamp: 3_000_000_000n, usageCoreNanoSeconds: 1n }), undefined);
    assert.equal(usageNanoCores(first, { ...first, usageCoreNanoSeconds: 6_000_000_000n }), undefined);
  });

  it('statfs into FsStats: available is bavail, used is blocks - bfree', () => {
    assert.deepEqual(fsFigures({ bsize: 4096, blocks: 100, bfree: 30, bavail: 20, files: 50, ffree: 10 }), {
      capacityBytes: 409_600,
      availableBytes: 81_920,
      usedBytes: 286_720,
      inodes: 50,
      inodesFree: 10,
      inodesUsed: 40,
    });
  });

  it('times are RFC 3339 in whole seconds, as metav1.Time', () => {
    assert.equal(apiTime(1_700_000_000_999_999_999n), '2023-11-14T22:13:20Z');
  });
});
