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

  it('decodes integers as Go int64: a sign, digits, in range; hostile values are 400 or 422, never a crash', () => {
    const status = (text: string): number | undefined => {
      try {
        parseLogQuery(q(text));
        return undefined;
      } catch (error) {
        return isLogOptionsError(error) ? error.status : -1;
      }
    };
    for (const bad of ['1e18', '0x10', '1.5', ' 5', '', '9223372036854775808', '-9223372036854775809', '99999999999999999999999999999999999']) {
      assert.equal(status(`limitBytes=${encodeURIComponent(bad)}`), 400, `limitBytes=${bad}`);
      assert.equal(status(`tailLines=${encodeURIComponent(bad)}`), 400, `tailLines=${bad}`);
    }
    assert.equal(status('tailLines=-9223372036854775808'), 422);
    assert.equal(status('limitBytes=-5'), 422);
    assert.equal(parseLogQuery(q('limitBytes=9223372036854775807')).limitBytes, 2 ** 63);
    assert.equal(parseLogQuery(q('tailLines=%2B5')).tailLines, 5);
    assert.equal(parseLogQuery(q('tailLines=1000000000000000000')).tailLines, 1e18);
    // A huge sinceSeconds reaches back before the epoch: everything, not a crash.
    assert.equal(readOptions(parseLogQuery(q('sinceSeconds=9223372036854775807')), Date.now()).sinceNs < 0n, true);
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
