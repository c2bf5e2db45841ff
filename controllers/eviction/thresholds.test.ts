import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_EVICTION, hardReservationBytes, isInvalidThresholdError, parseDurationMs, parseSignalMap, parseThresholds, parseThresholdValue, thresholdQuantity, type EvictionConfig } from './thresholds.js';

const config = (over: Partial<EvictionConfig>): EvictionConfig => ({ ...DEFAULT_EVICTION, ...over });

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err: unknown) {
    if (isInvalidThresholdError(err)) return err.field;
    throw err;
  }
  return 'accepted';
}

describe('eviction thresholds', () => {
  it('parses the kubelet defaults: four hard thresholds, quantities and percentages', () => {
    const thresholds = parseThresholds(DEFAULT_EVICTION);
    assert.deepEqual(thresholds.map((t) => [t.signal, t.value.text, t.gracePeriodMs]), [
      ['memory.available', '100Mi', 0],
      ['nodefs.available', '10%', 0],
      ['nodefs.inodesFree', '5%', 0],
      ['imagefs.available', '15%', 0],
    ]);
    assert.equal(thresholdQuantity(thresholds[0]?.value ?? { quantity: 0, text: '' }, 1e12), 100 * 2 ** 20);
    assert.equal(thresholdQuantity(thresholds[1]?.value ?? { quantity: 0, text: '' }, 1000), 100);
  });

  it('takes soft thresholds with their grace periods and minimum reclaim; 0 disables a hard one', () => {
    const thresholds = parseThresholds(config({ hard: { 'memory.available': '0' }, soft: { 'memory.available': '1Gi' }, softGracePeriod: { 'memory.available': '1m30s' }, minimumReclaim: { 'memory.available': '500Mi' } }));
    assert.equal(thresholds.length, 1);
    assert.equal(thresholds[0]?.gracePeriodMs, 90_000);
    assert.deepEqual(thresholds[0]?.minReclaim, { quantity: 500 * 2 ** 20, text: '500Mi' });
  });

  it('refuses what the kubelet refuses, naming the field', () => {
    assert.equal(refusal(() => parseThresholds(config({ hard: { 'memory.free': '1Gi' } }))), 'hard[memory.free]');
    assert.equal(refusal(() => parseThresholds(config({ soft: { 'memory.available': '1Gi' } }))), 'soft[memory.available]');
    assert.equal(refusal(() => parseThresholds(config({ softGracePeriod: { 'memory.available': '1m' } }))), 'softGracePeriod[memory.available]');
    assert.equal(refusal(() => parseThresholdValue('hard[x]', '120%')), 'hard[x]');
    assert.equal(refusal(() => parseThresholdValue('hard[x]', 'lots')), 'hard[x]');
    assert.equal(refusal(() => parseDurationMs('g', '90')), 'g');
    assert.equal(parseDurationMs('g', '1h2m3s500ms'), 3_723_500);
  });

  it('reads the flag syntax and what allocatable holds back', () => {
    assert.deepEqual(parseSignalMap('eviction-hard', 'memory.available<100Mi, nodefs.available<10%', '<'), { 'memory.available': '100Mi', 'nodefs.available': '10%' });
    assert.equal(refusal(() => parseSignalMap('eviction-hard', 'memory.available=1Gi', '<')), '--eviction-hard');
    const thresholds = parseThresholds(DEFAULT_EVICTION);
    assert.equal(hardReservationBytes(thresholds, 'memory.available', 8 * 2 ** 30), 100 * 2 ** 20);
    assert.equal(hardReservationBytes(thresholds, 'nodefs.available', 1000), 100);
    assert.equal(hardReservationBytes([], 'memory.available', 1000), 0);
  });
});
