import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { tailStart } from './log-tail.js';

function readerOf(data: Buffer): { reads: number; readAt: (p: number, l: number) => Promise<Buffer> } {
  const state = { reads: 0, readAt: (p: number, l: number) => { state.reads += 1; return Promise.resolve(data.subarray(p, p + l)); } };
  return state;
}

async function tailOf(text: string, n: number): Promise<string> {
  const data = Buffer.from(text);
  const start = await tailStart(readerOf(data).readAt, data.length, n);
  return data.subarray(start).toString();
}

describe('tailStart', () => {
  it('starts at the last n lines', async () => {
    assert.equal(await tailOf('a\nb\nc\n', 1), 'c\n');
    assert.equal(await tailOf('a\nb\nc\n', 2), 'b\nc\n');
    assert.equal(await tailOf('a\nb\nc\n', 3), 'a\nb\nc\n');
    assert.equal(await tailOf('a\nb\nc\n', 10), 'a\nb\nc\n');
    assert.equal(await tailOf('', 3), '');
  });

  it('does not count an incomplete last line, but includes it', async () => {
    assert.equal(await tailOf('a\nb\nc', 1), 'b\nc');
    assert.equal(await tailOf('a\nb\nc\n', 0), '');
    assert.equal(await tailOf('a\nb\nc', 0), 'c');
  });

  it('reads only the blocks it needs from the end, across block boundaries', async () => {
    const lines = Array.from({ length: 5000 }, (_, i) => `line ${String(i).padStart(5, '0')}\n`);
    const data = Buffer.from(lines.join(''));
    const reader = readerOf(data);
    const start = await tailStart(reader.readAt, data.length, 1000);
    assert.equal(data.subarray(start).toString(), lines.slice(-1000).join(''));
    // 1001 lines of 11 bytes: 11011 bytes, three 4 KiB blocks; the file is 55000 bytes.
    assert.equal(reader.reads, 3);
    for (const n of [0, 1, 371, 372, 373, 4999, 5000, 5001]) {
      const s = await tailStart(readerOf(data).readAt, data.length, n);
      assert.equal(data.subarray(s).toString(), n === 0 ? '' : lines.slice(-n).join(''), `n=${n}`);
    }
  });
});
