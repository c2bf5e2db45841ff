/**
 * The real clock's timers: a delay beyond Node's 32-bit limit waits the longest Node allows
 * instead of firing at once (Node's own behaviour: 1 ms and a TimeoutOverflowWarning). A hostile
 * pod with `periodSeconds: 2147483647` turned its probe into a 1 ms loop that way.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_TIMER_MS, systemClock } from './clock.js';

describe('systemClock.setTimeout', () => {
  it('does not fire a timer of 2147483647 s at once, and warns nothing', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error): void => {
      warnings.push(w.name);
    };
    process.on('warning', onWarning);
    let fired = 0;
    const handle = systemClock.setTimeout(() => fired++, 2_147_483_647 * 1000);
    try {
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      systemClock.clearTimeout(handle);
      process.off('warning', onWarning);
    }
    assert.equal(fired, 0);
    assert.deepEqual(warnings, []);
  });

  it('still fires a short timer', async () => {
    // The clock's timers are unref'd: a ref'd one keeps the test's event loop open meanwhile.
    const keepAlive = setTimeout(() => undefined, 1000);
    await new Promise<void>((resolve) => systemClock.setTimeout(resolve, 5));
    clearTimeout(keepAlive);
    assert.equal(MAX_TIMER_MS, 2_147_483_647);
  });
});
