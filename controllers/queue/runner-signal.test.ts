/**
 * A reconcile's signal carries one abort listener per CRI call in flight; a pod with many
 * containers has more than ten at once (they are observed, started and stopped together). Found by
 * the hostile-specs campaign (test/faults-scale): Node printed "MaxListenersExceededWarning:
 * Possible EventTarget memory leak detected" to the agent's log for a pod of 10 to 40 containers.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Job } from 'bullmq';
import { pino } from 'pino';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { DEFAULT_RECONCILE_BACKOFF, FailureCounter } from './policy.js';
import type { ReconcileJobData } from './redis.js';
import { createProcessor, type RunRecord } from './runner.js';

function fakeJob(): Job<ReconcileJobData, RunRecord> {
  const job = { id: 'job-1', data: { uid: 'u1', namespace: 'ns', name: 'p', reason: 'test' }, attemptsStarted: 1, log: () => Promise.resolve(1), moveToDelayed: () => Promise.resolve() };
  return job as unknown as Job<ReconcileJobData, RunRecord>;
}

describe('a reconcile signal with many calls in flight', () => {
  it('lets 40 concurrent calls listen on it without a listener-leak warning', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error): void => {
      warnings.push(`${w.name}: ${w.message}`);
    };
    process.on('warning', onWarning);
    try {
      const processor = createProcessor({
        reconciler: {
          reconcile: async (_ref, { signal }) => {
            // 40 containers stopped together: each call listens until it settles.
            await Promise.all(
              Array.from({ length: 40 }, async () => {
                const onAbort = (): void => undefined;
                signal?.addEventListener('abort', onAbort, { once: true });
                await new Promise((resolve) => setImmediate(resolve));
                signal?.removeEventListener('abort', onAbort);
              }),
            );
            return {};
          },
        },
        failures: new FailureCounter(),
        backoff: DEFAULT_RECONCILE_BACKOFF,
        clock: createFakeClock(),
        logger: pino({ level: 'silent' }),
        dropPendingNextIfDelayed: () => Promise.resolve(false),
      });
      await processor(fakeJob(), 'token', new AbortController().signal);
      // Node emits process warnings on a later tick.
      await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      process.off('warning', onWarning);
    }
    assert.deepEqual(warnings.filter((w) => w.startsWith('MaxListenersExceededWarning')), []);
  });
});
