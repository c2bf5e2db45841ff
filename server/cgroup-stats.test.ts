/**
 * The cgroup file parsers of `/metrics/cadvisor`, on texts copied from this machine's cgroup v1
 * tree (a burstable pod's cgroup, a CPU-limited container) and on cgroup v2 texts in the
 * kernel's formats.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cpuWeightToLimit, MAX_UINT64, parseBlkio, parseDiskstats, parseDiskstatsNames, parseIoStat, parseMaxOpenFiles, parseNetDev, parseV1Cgroup, parseV2Cgroup } from './cgroup-stats.js';

/** A v1 container cgroup's files, as read from /sys/fs/cgroup/{cpu,cpuacct,memory,blkio,pids}/kubepods/burstable/pod…/<id>. */
const V1_FILES = new Map([
  ['cpuacct.usage', '451234567\n'],
  ['cpuacct.stat', 'user 42\nsystem 3\n'],
  ['cpu.stat', 'nr_periods 46\nnr_throttled 45\nthrottled_time 4124836970\nnr_bursts 0\nburst_time 0\n'],
  ['cpu.shares', '102\n'],
  ['cpu.cfs_period_us', '100000\n'],
  ['cpu.cfs_quota_us', '20000\n'],
  ['memory.usage_in_bytes', '249856\n'],
  ['memory.max_usage_in_bytes', '67108864\n'],
  ['memory.failcnt', '12\n'],
  ['memory.kmem.usage_in_bytes', '98304\n'],
  ['memory.use_hierarchy', '1\n'],
  ['memory.limit_in_bytes', '67108864\n'],
  ['memory.memsw.limit_in_bytes', '9223372036854771712\n'],
  ['memory.soft_limit_in_bytes', '9223372036854771712\n'],
  ['memory.oom_control', 'oom_kill_disable 0\nunder_oom 0\noom_kill 2\n'],
  [
    'memory.stat',
    'cache 0\nrss 0\nmapped_file 0\ndirty 0\nworkingset_refault_anon 0\nworkingset_refault_file 24\npgfault 2608\npgmajfault 2\n' +
      'total_cache 102400\ntotal_rss 147456\ntotal_mapped_file 28672\ntotal_dirty 40960\ntotal_writeback 0\ntotal_swap 0\ntotal_inactive_file 61440\ntotal_active_file 40960\n',
  ],
  ['blkio.io_service_bytes_recursive', 'Total 0\n'],
  ['blkio.throttle.io_service_bytes_recursive', '254:0 Read 4096\n254:0 Write 8192\n254:0 Sync 12288\n254:0 Total 12288\nTotal 12288\n'],
  ['blkio.throttle.io_serviced_recursive', '254:0 Read 1\n254:0 Write 2\nTotal 3\n'],
  ['pids.current', '3\n'],
  ['pids.max', 'max\n'],
]);

describe('cgroup v1 figures', () => {
  const figures = parseV1Cgroup(V1_FILES);

  it('reads CPU time in ns, user and system from USER_HZ ticks, the CFS counters', () => {
    assert.deepEqual(figures.cpu, { totalNs: 451234567, userNs: 420_000_000, systemNs: 30_000_000, periods: 46, throttledPeriods: 45, throttledNs: 4124836970, burstPeriods: 0, burstNs: 0 });
  });

  it('reads memory from the hierarchical totals, the working set as usage less inactive file, OOM kills from oom_control', () => {
    const m = figures.memory;
    assert.ok(m !== undefined);
    assert.deepEqual([m.usage, m.maxUsage, m.failcnt, m.kernel, m.cache, m.rss, m.mappedFile, m.swap, m.workingSet], [249856, 67108864, 12, 98304, 102400, 147456, 28672, 0, 249856 - 61440]);
    assert.deepEqual([m.pgfault, m.pgmajfault, m.refaultFile, m.fileDirty, m.oomKills, m.activeFile, m.inactiveFile], [2608, 2, 24, 40960, 2, 40960, 61440]);
    // v1 has neither memory.events nor reclaim counters: not read as 0.
    assert.deepEqual([m.eventsHigh, m.eventsMax, m.pgscan, m.pgsteal], [undefined, undefined, undefined, undefined]);
  });

  it('falls back to the throttle blkio files when the scheduler ones have no device lines, as runc does', () => {
    assert.deepEqual(figures.io?.serviceBytes.filter((d) => d.op === 'Read' || d.op === 'Write'), [
      { major: 254, minor: 0, op: 'Read', value: 4096 },
      { major: 254, minor: 0, op: 'Write', value: 8192 },
    ]);
    assert.deepEqual(figures.io?.serviced.map((d) => d.value), [1, 2]);
  });

  it('reads the spec: shares, period, quota (-1 is none), limits; pids.max "max" as 0', () => {
    assert.deepEqual(figures.spec, { hasCpu: true, cpuShares: 102, cpuPeriodUs: 100000, cpuQuotaUs: 20000, hasMemory: true, memoryLimit: 67108864, memorySwapLimit: 9223372036854771712, memoryReservation: 9223372036854771712 });
    assert.equal(parseV1Cgroup(new Map([['cpu.shares', '2'], ['cpu.cfs_quota_us', '-1']])).spec.cpuQuotaUs, 0);
    assert.deepEqual([figures.threads, figures.threadsMax], [3, 0]);
  });

  it('leaves out what a cgroup without the controller cannot say', () => {
    const bare = parseV1Cgroup(new Map());
    assert.deepEqual([bare.cpu, bare.memory, bare.io, bare.threads], [undefined, undefined, undefined, undefined]);
    assert.equal(bare.spec.hasMemory, false);
  });
});

describe('cgroup v2 figures', () => {
  const files = new Map([
    ['cpu.stat', 'usage_usec 2000\nuser_usec 1500\nsystem_usec 500\nnr_periods 10\nnr_throttled 4\nthrottled_usec 300\nnr_bursts 1\nburst_usec 7\n'],
    ['cpu.weight', '100\n'],
    ['cpu.max', '50000 100000\n'],
    ['memory.current', '1048576\n'],
    ['memory.peak', '2097152\n'],
    ['memory.swap.current', '4096\n'],
    ['memory.events', 'low 0\nhigh 3\nmax 5\noom 1\noom_kill 1\n'],
    ['memory.max', 'max\n'],
    ['memory.swap.max', 'max\n'],
    ['memory.min', '0\n'],
    ['memory.stat', 'anon 524288\nfile 262144\nkernel 65536\nfile_mapped 8192\nfile_dirty 4096\nfile_writeback 0\nactive_file 131072\ninactive_file 131072\npgfault 99\npgmajfault 1\npgscan 7\npgsteal 6\nworkingset_refault_anon 2\nworkingset_refault_file 3\n'],
    ['io.stat', '8:0 rbytes=1024 wbytes=2048 rios=1 wios=2 dbytes=0 dios=0\n'],
    ['pids.current', '2\n'],
    ['pids.max', '1024\n'],
  ]);
  const figures = parseV2Cgroup(files);

  it('reads cpu.stat in µs as ns', () => {
    assert.deepEqual(figures.cpu, { totalNs: 2_000_000, userNs: 1_500_000, systemNs: 500_000, periods: 10, throttledPeriods: 4, throttledNs: 300_000, burstPeriods: 1, burstNs: 7000 });
  });

  it('reads memory as runc maps v2: file as cache, anon as RSS, memory.events max as failcnt, swap.current as swap', () => {
    const m = figures.memory;
    assert.ok(m !== undefined);
    assert.deepEqual([m.usage, m.maxUsage, m.failcnt, m.kernel, m.cache, m.rss, m.swap, m.mappedFile, m.workingSet], [1048576, 2097152, 5, 65536, 262144, 524288, 4096, 8192, 1048576 - 131072]);
    assert.deepEqual([m.eventsHigh, m.eventsMax, m.oomKills, m.pgscan, m.pgsteal, m.refaultAnon, m.refaultFile, m.fileDirty], [3, 5, 1, 7, 6, 2, 3, 4096]);
  });

  it('reads the spec: weight as shares, cpu.max quota and period, "max" limits', () => {
    assert.deepEqual(figures.spec, { hasCpu: true, cpuShares: cpuWeightToLimit(100), cpuPeriodUs: 100000, cpuQuotaUs: 50000, hasMemory: true, memoryLimit: MAX_UINT64, memorySwapLimit: MAX_UINT64, memoryReservation: 0 });
    assert.equal(parseV2Cgroup(new Map([['cpu.stat', 'usage_usec 1\n'], ['cpu.max', 'max 100000\n']])).spec.cpuQuotaUs, 0);
  });

  it('reads io.stat as per-device Read and Write bytes and operations', () => {
    assert.deepEqual(figures.io, {
      serviceBytes: [
        { major: 8, minor: 0, op: 'Read', value: 1024 },
        { major: 8, minor: 0, op: 'Write', value: 2048 },
      ],
      serviced: [
        { major: 8, minor: 0, op: 'Read', value: 1 },
        { major: 8, minor: 0, op: 'Write', value: 2 },
      ],
    });
    assert.deepEqual(parseIoStat('garbage\n'), { serviceBytes: [], serviced: [] });
  });

  it("converts weights with cAdvisor's formula", () => {
    assert.deepEqual([1, 100, 10000, 0, 10001].map(cpuWeightToLimit), [2, 2597, 262144, 0, 0]);
  });
});

describe('process files', () => {
  const netDev = [
    'Inter-|   Receive                                                |  Transmit',
    ' face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed',
    '    lo:    1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0',
    '  eth0:   12616     186    1    2    0     0          0         0     3034      31    3    4    0     0       0          0',
  ].join('\n');

  it('reads /proc/<pid>/net/dev without loopback', () => {
    assert.deepEqual(parseNetDev(netDev), [{ name: 'eth0', rxBytes: 12616, rxPackets: 186, rxErrors: 1, rxDropped: 2, txBytes: 3034, txPackets: 31, txErrors: 3, txDropped: 4 }]);
    assert.equal(parseNetDev(`${netDev}\n  bad: 1 2 3\n`), undefined);
  });

  it("reads the soft limit on open files (unlimited is -1)", () => {
    const limits = 'Limit                     Soft Limit           Hard Limit           Units\nMax open files            65536                524288               files\n';
    assert.equal(parseMaxOpenFiles(limits), 65536);
    assert.equal(parseMaxOpenFiles(limits.replace('65536', 'unlimited')), -1);
    assert.equal(parseMaxOpenFiles('nothing'), undefined);
  });

  it('reads /proc/diskstats counters and device names', () => {
    const text = ' 254       0 vda 975557 94800 37134378 1354454 4145813 1840337 118604736 1445041 0 476612 3059550 1040494 973 51100848 142359 751161 117693\n';
    assert.equal(parseDiskstatsNames(text).get('254:0'), '/dev/vda');
    assert.deepEqual(parseDiskstats(text).get('/dev/vda'), { readsCompleted: 975557, readsMerged: 94800, sectorsRead: 37134378, readTimeMs: 1354454, writesCompleted: 4145813, writesMerged: 1840337, sectorsWritten: 118604736, writeTimeMs: 1445041, ioInProgress: 0, ioTimeMs: 476612, weightedIoTimeMs: 3059550 });
    assert.deepEqual(parseBlkio('8:0 Read 1\nTotal 1\n'), [{ major: 8, minor: 0, op: 'Read', value: 1 }]);
  });
});
