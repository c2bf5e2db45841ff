/**
 * Fault: Redis loses every queue key (`FLUSHALL`) in the middle of a 50-pod churn, right before 20
 * pods are deleted and 10 created. Redis holds only queue state: the queue's resync hook must
 * re-enqueue every pod, and the namespace converges as if nothing happened, counted without
 * sampling: every remaining pod with exactly one sandbox and one container in any state (two
 * overlapping reconciles would leave a second one), nothing orphaned, and pod by pod against the
 * runtime at the flush, no container replaced or restarted: every restartCount stays 0.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createNamespace, eventually, requireCluster } from '../e2e/helpers.js';
import { converged, convergenceProblems, describeLedger, restartLedger } from './census.js';
import { churnThrough, type ChurnOutcome } from './churn.js';
import { daemonPid, ensureClusterUp, flushRedis } from './harness.js';
import { deleteNamespaceAndWait, describeStates } from './state.js';

describe('Redis flushed during a 50-pod create/delete churn', () => {
  let namespace = '';
  let outcome: ChurnOutcome | undefined;
  let agentPid: number | undefined;

  before(async () => {
    requireCluster();
    await ensureClusterUp();
    agentPid = await daemonPid('nodelet');
    namespace = await createNamespace('faults-redis');
  });

  after(async () => {
    await ensureClusterUp();
    if (namespace !== '') await deleteNamespaceAndWait(namespace);
  });

  it('converges after FLUSHALL: every remaining pod Running, the deleted ones gone, the agent still the same process', async (t) => {
    outcome = await churnThrough(
      { namespace, initial: 50, batchSize: 10, batchPauseMs: 1000, runningBeforeFault: 10, toDelete: 20, extra: 10 },
      { inject: flushRedis, recover: () => Promise.resolve() },
    );
    await eventually('the namespace to converge after the flush', converged(outcome.expectation), 240_000);
    const convergedMs = Date.now() - outcome.recoveredAtMs;
    assert.deepEqual(await convergenceProblems(outcome.expectation), []);
    assert.equal(await daemonPid('nodelet'), agentPid, 'the agent survived the flush');
    t.diagnostic(
      `at the flush the runtime had sandboxes: ${describeStates(outcome.atFault.sandboxes)}; containers: ${describeStates(outcome.atFault.containers)}; converged ${convergedMs} ms after the last pods were created`,
    );
  });

  it('restarted and replaced no container in any pod: every one running at the flush kept, every restartCount 0', async (t) => {
    assert.ok(outcome !== undefined, 'the churn ran');
    const ledger = await restartLedger(namespace, outcome.atFault, false);
    t.diagnostic(describeLedger(ledger.summary));
    assert.deepEqual(ledger.problems, []);
    assert.equal(ledger.summary.createdReplaced, 0);
  });
});
