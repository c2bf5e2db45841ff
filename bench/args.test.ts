import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseBatchBenchSettings, positiveInts } from './args.js';

describe('the batch benchmarks\' command line', () => {
  it('defaults to 30 and 110 pods, 3 rounds, the given document, and the bare npm script', () => {
    assert.deepEqual(parseBatchBenchSettings([], 'bench:x', '/d.md'), { sizes: [30, 110], rounds: 3, doc: '/d.md', command: 'npm run bench:x' });
  });

  it('takes sizes, rounds and --no-doc, and names the options in the command without --no-doc', () => {
    assert.deepEqual(parseBatchBenchSettings(['--sizes', '5', '--rounds', '1', '--no-doc'], 'bench:x', '/d.md'), { sizes: [5], rounds: 1, doc: undefined, command: 'npm run bench:x -- --sizes 5 --rounds 1' });
  });

  it('refuses a size that is not a positive integer, naming the flag', () => {
    assert.throws(() => parseBatchBenchSettings(['--sizes', '30,0'], 'bench:x', '/d.md'), /--sizes wants positive integers, got 30,0/);
    assert.deepEqual(positiveInts('1, 2', '--rounds'), [1, 2]);
  });
});
