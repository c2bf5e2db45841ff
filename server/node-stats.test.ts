/**
 * The node readers over files laid out as `/proc` and `/sys/fs/cgroup` are: cgroup v1 (the
 * `cpuacct` and `memory` hierarchies), cgroup v2 (the unified root, whose memory usage comes from
 * meminfo) and no cgroup at all (`/proc/stat`'s busy time).
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readNode } from './node-stats.js';

const MEMINFO = 'MemTotal:       1000 kB\nMemFree:         200 kB\nInactive(file):   50 kB\n';
const PROC_STAT = 'cpu  100 0 50 9000 10 0 0 0 0 0\nbtime 1700000000\n';

async function layout(root: string, files: Record<string, string>): Promise<{ procDir: string; cgroupDir: string }> {
  for (const [name, text] of Object.entries({ 'proc/meminfo': MEMINFO, 'proc/stat': PROC_STAT, 'proc/loadavg': '0.1 0.2 0.3 2/345 999\n', 'proc/sys/kernel/pid_max': '4194304\n', ...files })) {
    await mkdir(path.dirname(path.join(root, name)), { recursive: true });
    await writeFile(path.join(root, name), text);
  }
  await mkdir(path.join(root, 'cgroup'), { recursive: true });
  return { procDir: path.join(root, 'proc'), cgroupDir: path.join(root, 'cgroup') };
}

describe('node readers', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'node-stats-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('cgroup v1: cpuacct.usage, memory.usage_in_bytes less total_inactive_file, the total_* counters', async () => {
    const paths = await layout(path.join(dir, 'v1'), {
      'cgroup/cpuacct/cpuacct.usage': '123456789\n',
      'cgroup/memory/memory.usage_in_bytes': '800000\n',
      'cgroup/memory/memory.stat': 'inactive_file 1\ntotal_inactive_file 300000\ntotal_rss 7\ntotal_pgfault 8\ntotal_pgmajfault 9\n',
    });
    const node = await readNode(paths);
    assert.equal(node.usageCoreNanoSeconds, 123_456_789n);
    assert.deepEqual(node.memory, { capacityBytes: 1_024_000n, usageBytes: 800_000n, workingSetBytes: 500_000n, rssBytes: 7n, pageFaults: 8n, majorPageFaults: 9n });
    assert.equal(node.bootTimeSeconds, 1_700_000_000);
    assert.deepEqual(node.rlimit, { maxpid: 4_194_304, curproc: 345 });
    assert.deepEqual(node.swap, { usageBytes: 0n, availableBytes: 0n }, 'no swap lines: none in use');
  });

  it('swap from meminfo: SwapTotal less SwapFree in use, SwapFree available', async () => {
    const paths = await layout(path.join(dir, 'swap'), { 'proc/meminfo': `${MEMINFO}SwapTotal:      2048 kB\nSwapFree:       1536 kB\n` });
    assert.deepEqual((await readNode(paths)).swap, { usageBytes: 524_288n, availableBytes: 1_572_864n });
  });

  it('cgroup v2: cpu.stat usage_usec; memory from meminfo less the root inactive_file', async () => {
    const paths = await layout(path.join(dir, 'v2'), { 'cgroup/cpu.stat': 'usage_usec 2000\nuser_usec 1\n', 'cgroup/memory.stat': 'anon 11\ninactive_file 102400\npgfault 12\npgmajfault 13\n' });
    const node = await readNode(paths);
    assert.equal(node.usageCoreNanoSeconds, 2_000_000n);
    assert.deepEqual(node.memory, { capacityBytes: 1_024_000n, usageBytes: 819_200n, workingSetBytes: 716_800n, rssBytes: 11n, pageFaults: 12n, majorPageFaults: 13n });
  });

  it('no cgroup files: /proc/stat busy time, meminfo Inactive(file)', async () => {
    const node = await readNode(await layout(path.join(dir, 'none'), {}));
    assert.equal(node.usageCoreNanoSeconds, 1_500_000_000n);
    assert.equal(node.memory.workingSetBytes, 819_200n - 51_200n);
    assert.equal(node.memory.rssBytes, undefined);
  });
});
