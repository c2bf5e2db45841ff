/**
 * Fault: the agent is killed with SIGKILL in the middle of a 50-pod churn; 20 pods are deleted and
 * 10 created while it is dead; `up.sh` starts it again. Everything must converge from the API and
 * the runtime alone (restart safety), counted without sampling: every remaining pod Running and
 * Ready with exactly one sandbox (in any state) and exactly one container (in any state), the one
 * the API reports; the deleted ones gone from the API and from containerd; nothing labelled for a
 * UID the API does not have. And pod by pod against the runtime as the dead agent left it: every container that
 * was running still runs with the same ID and restart count, one that was created but not started
 * was started as it was or replaced with the next restart count, and every later one has
 * restartCount 0.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createNamespace, eventually, requireCluster } from '../e2e/helpers.js';
import { converged, convergenceProblems, describeLedger, restartLedger } from './census.js';
import { churnThrough, type ChurnOutcome } from './churn.js';
import { clusterUp, daemonPid, ensureClusterUp, killDaemon } from './harness.js';
import { deleteNamespaceAndWait, describeStates } from './state.js';

describe('the agent killed with SIGKILL during a 50-pod create/delete churn', () => {
  let namespace = '';
  let outcome: ChurnOutcome | undefined;
  let killedPid = 0;

  before(async () => {
    requireCluster();
    await ensureClusterUp();
    namespace = await createNamespace('faults-kill');
  });

  after(async () => {
    await ensureClusterUp();
    if (namespace !== '') await deleteNamespaceAndWait(namespace);
  });

  it('converges once the agent is started again: every remaining pod Running, the deleted ones gone, everything counted', async (t) => {
    outcome = await churnThrough(
      { namespace, initial: 50, batchSize: 10, batchPauseMs: 1000, runningBeforeFault: 10, toDelete: 20, extra: 10 },
      {
        inject: async () => {
          killedPid = await killDaemon('nodelet');
        },
        recover: clusterUp,
        recordRuntime: 'before-recover',
      },
    );
    assert.equal(outcome.expectation.present.length, 40);
    assert.equal(outcome.expectation.deletedUids.filter((uid) => uid !== '').length, 20);
    assert.ok(outcome.runningBeforeFault >= 10, `${outcome.runningBeforeFault} pods ran before the kill`);
    const agentPid = await daemonPid('nodelet');
    assert.ok(agentPid !== undefined && agentPid !== killedPid, 'a new agent process runs');
    await eventually('the namespace to converge after the agent restart', converged(outcome.expectation, outcome.atFault), 300_000);
    const convergedMs = Date.now() - outcome.recoveredAtMs;
    assert.deepEqual(await convergenceProblems(outcome.expectation, outcome.atFault), []);
    t.diagnostic(
      `while the agent was dead the runtime had sandboxes: ${describeStates(outcome.atFault.sandboxes)}; containers: ${describeStates(outcome.atFault.containers)}` +
        ` (${outcome.runningBeforeFault} pods Running in the API just before); up.sh took ${outcome.recoverMs} ms; converged ${convergedMs} ms after up.sh returned`,
    );
  });

  it('restarted no container that was running at the kill, in any pod; created-not-started ones were started or replaced, never duplicated', async (t) => {
    assert.ok(outcome !== undefined, 'the churn ran');
    const ledger = await restartLedger(namespace, outcome.atFault, true);
    t.diagnostic(describeLedger(ledger.summary));
    assert.deepEqual(ledger.problems, []);
    assert.equal(ledger.summary.keptRunning, ledger.summary.runningAtFault);
    // Two of every five initial pods are deleted: some of those running at the kill remain to check.
    assert.ok(ledger.summary.runningAtFault > 0, `${ledger.summary.runningAtFault} containers of kept pods ran at the kill`);
  });
});
