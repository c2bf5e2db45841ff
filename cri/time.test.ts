import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dateToNanos, nanosToDate, nanosToOptionalDate } from './time.js';

void describe('CRI time conversion', () => {
  void it('turns nanoseconds into a Date, dropping sub-millisecond precision', () => {
    assert.equal(nanosToDate(1_700_000_000_123_456_789n).toISOString(), '2023-11-14T22:13:20.123Z');
  });

  void it('treats the runtime zero timestamp as absent', () => {
    assert.equal(nanosToOptionalDate(0n), undefined);
    assert.equal(nanosToOptionalDate(1_000_000n)?.getTime(), 1);
  });

  void it('round-trips a Date through nanoseconds', () => {
    const date = new Date('2026-01-02T03:04:05.678Z');
    assert.equal(dateToNanos(date), 1_767_323_045_678_000_000n);
    assert.equal(nanosToDate(dateToNanos(date)).getTime(), date.getTime());
  });
});
