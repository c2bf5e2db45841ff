/**
 * The node server's log reader over real files laid out as the runtime and a log rotator leave
 * them (`<podLogDir>/<ns>_<pod>_<uid>/<container>/0.log`, rotated `0.log.<timestamp>` and
 * `0.log.<timestamp>.gz` next to it). Like the kubelet's, it reads only the file the runtime
 * writes; a rotation while following is noticed, the rest of the old file read, then the new file
 * from its start, each line exactly once. Needs no cluster.
 */
import assert from 'node:assert/strict';
import { appendFile, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { readLogs, type LogReadContext, type ReadLogsOptions } from '../../server/log-reader.js';

const stamp = (i: number): string => new Date(Date.parse('2026-11-24T04:00:00Z') + i * 1000).toISOString().replace('Z', '000000Z');
const criLines = (from: number, to: number, stream = 'stdout'): string => Array.from({ length: to - from }, (_, k) => `${stamp(from + k)} ${stream} F line ${from + k}\n`).join('');
const plain = (from: number, to: number): string => Array.from({ length: to - from }, (_, k) => `line ${from + k}\n`).join('');

async function collect(file: string, options: Partial<ReadLogsOptions>, running: () => boolean = () => false): Promise<{ text: string; writes: number }> {
  const chunks: Buffer[] = [];
  const context: LogReadContext = {
    write: (chunk) => {
      chunks.push(Buffer.from(chunk));
      return Promise.resolve();
    },
    isRunning: () => Promise.resolve(running()),
    wait: () => sleep(10),
    signal: new AbortController().signal,
  };
  await readLogs(file, { sinceNs: 0n, timestamps: false, follow: false, ...options }, context);
  return { text: Buffer.concat(chunks).toString(), writes: chunks.length };
}

describe('the log reader over real rotated log files', () => {
  let root = '';
  let dir = '';
  let current = '';

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'pod-logs-'));
    dir = path.join(root, 'ns_web_6f1c2a4e-0000-4000-8000-000000000001', 'app');
    await mkdir(dir, { recursive: true });
    current = path.join(dir, '0.log');
    await writeFile(path.join(dir, '0.log.20261124-040000.gz'), gzipSync(criLines(0, 100)));
    await writeFile(path.join(dir, '0.log.20261124-040100'), criLines(100, 200));
    await writeFile(current, criLines(200, 250));
  });

  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('reads only the current file, as the kubelet (rotated and compressed files are not part of the logs)', async () => {
    assert.equal((await collect(current, {})).text, plain(200, 250));
  });

  it('tails, limits and filters by time within the current file', async () => {
    assert.equal((await collect(current, { tail: 3 })).text, plain(247, 250));
    assert.equal((await collect(current, { limitBytes: 20 })).text, plain(200, 250).slice(0, 20));
    const since = BigInt(Date.parse('2026-11-24T04:00:00Z') + 240_000) * 1_000_000n;
    assert.equal((await collect(current, { sinceNs: since })).text, plain(240, 250));
  });

  it('follows across a rotation: the rest of the old file, then the new one, each line once', async () => {
    let running = true;
    const reading = collect(current, { follow: true }, () => running);
    await sleep(100);
    await appendFile(current, criLines(250, 260));
    // What a rotator does: rename the file, then the runtime reopens (creates) the path.
    await rename(current, path.join(dir, '0.log.20261124-040200'));
    await appendFile(path.join(dir, '0.log.20261124-040200'), criLines(260, 262));
    await writeFile(current, criLines(262, 270));
    await sleep(100);
    await appendFile(current, criLines(270, 275));
    running = false;
    const { text } = await reading;
    assert.equal(text, plain(200, 275));
    const counted = text.split('\n').filter((l) => l !== '').length;
    assert.equal(counted, 75);
  });

  it('reads a large file in blocks: a tail of a few lines reads a few blocks, not the file', async () => {
    const big = path.join(dir, 'big.log');
    const total = 200_000;
    await writeFile(big, criLines(0, total));
    const started = process.hrtime.bigint();
    const tailed = await collect(big, { tail: 5 });
    const tailMs = Number(process.hrtime.bigint() - started) / 1e6;
    assert.equal(tailed.text, plain(total - 5, total));
    const fullStarted = process.hrtime.bigint();
    const full = await collect(big, {});
    const fullMs = Number(process.hrtime.bigint() - fullStarted) / 1e6;
    assert.equal(full.text.split('\n').length - 1, total);
    console.log(`log reader: ${total} lines (${(full.text.length / 1e6).toFixed(1)} MB out): tail 5 in ${tailMs.toFixed(1)} ms, whole file in ${fullMs.toFixed(0)} ms in ${full.writes} writes`);
  });
});
