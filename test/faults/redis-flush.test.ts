/**
 * Fault: Redis loses every queue key (`FLUSHALL`) in the middle of a 50-pod churn, right before 20
 * pods are deleted and 10 created. Redis holds only queue state: the queue's resync hook must
 * re-enqueue every pod, and the namespace converges as if nothing happened, without restarting
 * any running container.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createNamespace, eventually, requireCluster } from '../e2e/helpers.js';
import { churnThrough, type ChurnOutcome } from './churn.js';
import { daemonPid, ensureClusterUp, flushRedis } from './harness.js';
import { converged, convergenceProblems, deleteNamespaceAndWait, replacedContainers } from './state.js';

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
    if (namespace !== '') await deleteNamespaceAndWait(namespace);
  });

  it('converges after FLUSHALL: every remaining pod Running, the deleted ones gone, the agent still the same process', async () => {
    outcome = await churnThrough(
      { namespace, initial: 50, batchSize: 10, batchPauseMs: 1000, runningBeforeFault: 10, toDelete: 20, extra: 10 },
      { inject: flushRedis, recover: () => Promise.resolve() },
    );
    await eventually('the namespace to converge after the flush', converged(outcome.expectation), 240_000);
    assert.deepEqual(await convergenceProblems(outcome.expectation), []);
    assert.equal(await daemonPid('nodelet'), agentPid, 'the agent survived the flush');
  });

  it('restarted none of the containers that were running before the flush', async () => {
    assert.ok(outcome !== undefined, 'the churn ran');
    assert.deepEqual(await replacedContainers(namespace, outcome.survivors), []);
  });
});
