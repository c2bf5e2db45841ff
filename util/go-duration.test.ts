import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidGoDurationError, parseGoDurationMs, parseGoDurationMsOr } from './go-duration.js';

describe('parseGoDurationMs', () => {
  it("reads Go's durations: units from ns to h, fractions, several parts, a sign, a bare 0", () => {
    const cases: [string, number][] = [['0', 0], ['90s', 90_000], ['1m30s', 90_000], ['12h', 43_200_000], ['500ms', 500], ['1.5h', 5_400_000], ['.5s', 500], ['2us', 0.002], ['3µs', 0.003], ['1000000ns', 1], ['-1m', -60_000], ['+2s', 2000], ['1h0m0s', 3_600_000]];
    for (const [text, ms] of cases) assert.equal(parseGoDurationMs(text), ms, text);
  });

  it('refuses what Go refuses: no unit, an unknown unit, empty, junk between parts', () => {
    for (const text of ['', '10', '5d', '1m 30s', 'm', '1.2.3s', 's1', '-']) {
      assert.throws(() => parseGoDurationMs(text), InvalidGoDurationError, text);
    }
  });

  it("reports a bad duration as the caller's own error, with the reason, and passes a good one through", () => {
    class FieldError extends Error {}
    assert.equal(parseGoDurationMsOr('1m', (reason) => new FieldError(reason)), 60_000);
    assert.throws(() => parseGoDurationMsOr('soon', (reason) => new FieldError(`grace: ${reason}`)), (e: unknown) => e instanceof FieldError && e.message === 'grace: not a duration such as 90s or 1m30s: "soon"');
  });
});
