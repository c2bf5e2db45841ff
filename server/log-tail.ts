/**
 * Where the last `n` lines of a log file start, found by reading blocks backwards from the end
 * (never the whole file), as the kubelet's tail: lines are the file's lines (each CRI line, partial
 * or not, is one), and an incomplete last line (no newline yet) is not counted but is included.
 */

/** Reads `length` bytes at `position`. */
export type ReadAt = (position: number, length: number) => Promise<Buffer>;

const BLOCK = 4096;

/** The offset of the start of the last `n` lines of a file of `size` bytes; 0 when it has fewer. */
export async function tailStart(readAt: ReadAt, size: number, n: number): Promise<number> {
  let newlines = 0;
  let left = size;
  let block: Buffer = Buffer.alloc(0);
  // Read backwards until the blocks read hold more than n newlines (or the file is exhausted).
  while (left > 0 && newlines <= n) {
    const length = Math.min(BLOCK, left);
    left -= length;
    block = await readAt(left, length);
    for (const byte of block) if (byte === 0x0a) newlines += 1;
  }
  // Drop whole lines from the front of the last block read until exactly n newlines remain after.
  let offset = 0;
  for (; newlines > n; newlines -= 1) offset = block.indexOf(0x0a, offset) + 1;
  return left + offset;
}
