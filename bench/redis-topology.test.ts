import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cpuSecondsOfStat } from './redis-topology.js';

describe('cpuSecondsOfStat', () => {
  it('adds utime and stime (fields 14 and 15) in clock ticks, even when the command name has spaces and parentheses', () => {
    const stat = '4242 (redis-server (x) 1) S 1 4242 4242 0 -1 4194560 1000 0 0 0 1234 566 0 0 20 0 5 0 100 0 0';
    assert.equal(cpuSecondsOfStat(stat, 100), 18);
  });

  it('refuses a line it cannot read instead of reading 0', () => {
    assert.throws(() => cpuSecondsOfStat('4242 (redis-server) S 1', 100), /unreadable/);
  });
});
