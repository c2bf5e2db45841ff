/**
 * Fault: the agent is killed with SIGKILL in the middle of a 50-pod churn; 20 pods are deleted and
 * 10 created while it is dead; `up.sh` starts it again. Everything must converge from the API and
 * the runtime alone (restart safety): the pods that should exist run, the deleted ones are gone
 * from the API and from containerd, no pod has two sandboxes, no container is orphaned, and no
 * container that was running before the kill was restarted.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createNamespace, eventually, requireCluster } from '../e2e/helpers.js';
import { churnThrough, type ChurnOutcome } from './churn.js';
import { clusterUp, daemonPid, ensureClusterUp, killDaemon } from './harness.js';
import { converged, convergenceProblems, deleteNamespaceAndWait, replacedContainers } from './state.js';

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
    if (namespace !== '') await deleteNamespaceAndWait(namespace);
  });

  it('converges once the agent is started again: every remaining pod Running, the deleted ones gone', async () => {
    outcome = await churnThrough(
      { namespace, initial: 50, batchSize: 10, batchPauseMs: 1000, runningBeforeFault: 10, toDelete: 20, extra: 10 },
      {
        inject: async () => {
          killedPid = await killDaemon('nodelet');
        },
        recover: clusterUp,
      },
    );
    assert.equal(outcome.expectation.present.length, 40);
    assert.equal(outcome.expectation.deletedUids.filter((uid) => uid !== '').length, 20);
    assert.ok(outcome.runningAtFault >= 10 && outcome.survivors.length > 0, `${outcome.runningAtFault} pods ran at the kill, ${outcome.survivors.length} of them kept`);
    const agentPid = await daemonPid('nodelet');
    assert.ok(agentPid !== undefined && agentPid !== killedPid, 'a new agent process runs');
    await eventually('the namespace to converge after the agent restart', converged(outcome.expectation), 300_000);
    assert.deepEqual(await convergenceProblems(outcome.expectation), []);
  });

  it('restarted none of the containers that were running before the kill', async () => {
    assert.ok(outcome !== undefined, 'the churn ran');
    assert.deepEqual(await replacedContainers(namespace, outcome.survivors), []);
  });
});
