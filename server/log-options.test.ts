import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isLogOptionsError, parseLogQuery, readOptions } from './log-options.js';

const q = (text: string): URLSearchParams => new URLSearchParams(text);

describe('parseLogQuery', () => {
  it('reads every PodLogOptions field kubectl sends', () => {
    assert.deepEqual(parseLogQuery(q('follow=true&previous=1&timestamps=true&tailLines=5&limitBytes=100&sinceSeconds=60')), {
      follow: true,
      previous: true,
      timestamps: true,
      tailLines: 5,
      limitBytes: 100,
      sinceSeconds: 60,
    });
    assert.deepEqual(parseLogQuery(q('')), { follow: false, previous: false, timestamps: false });
    assert.equal(parseLogQuery(q('sinceTime=2026-11-24T04:00:00Z')).sinceTimeNs, 1795492800000000000n);
    assert.equal(parseLogQuery(q('follow=false')).follow, false);
  });

  it('refuses what cannot be decoded (400) and what is invalid (422), as the kubelet', () => {
    const status = (text: string): number | undefined => {
      try {
        parseLogQuery(q(text));
        return undefined;
      } catch (error) {
        return isLogOptionsError(error) ? error.status : -1;
      }
    };
    assert.equal(status('tailLines=abc'), 400);
    assert.equal(status('follow=yes'), 400);
    assert.equal(status('sinceTime=yesterday'), 400);
    assert.equal(status('tailLines=-1'), 422);
    assert.equal(status('limitBytes=0'), 422);
    assert.equal(status('sinceSeconds=0'), 422);
    assert.equal(status('sinceSeconds=5&sinceTime=2026-11-24T04:00:00Z'), 422);
    assert.equal(status('tailLines=0'), undefined);
  });
});

describe('readOptions (the kubelet NewLogOptions)', () => {
  const now = Date.parse('2026-11-24T04:10:00Z');

  it('counts sinceSeconds back from now', () => {
    assert.equal(readOptions(parseLogQuery(q('sinceSeconds=600')), now).sinceNs, 1795492800000000000n);
  });

  it('takes sinceTime as given, and nothing since when neither is set', () => {
    assert.equal(readOptions(parseLogQuery(q('sinceTime=2026-11-24T04:00:00Z')), now).sinceNs, 1795492800000000000n);
    assert.equal(readOptions(parseLogQuery(q('')), now).sinceNs, 0n);
  });

  it('passes tail, limit, timestamps and follow on', () => {
    assert.deepEqual(readOptions(parseLogQuery(q('tailLines=3&limitBytes=7&timestamps&follow')), now), { sinceNs: 0n, timestamps: true, follow: true, tail: 3, limitBytes: 7 });
  });
});
