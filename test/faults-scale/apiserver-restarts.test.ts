/**
 * Fault campaign at scale: the API server killed (SIGKILL) and started again 5 times during a
 * 100-pod create/delete churn (`../faults/rounds.ts`: 5 rounds; each creates 20 pods and deletes
 * 0–8 live ones, then kills the API server 0–5 s later; it stays down a seeded 5–15 s, then
 * `up.sh` starts it, and whatever else died with it, again; the round ends when the namespace has
 * converged). The agent runs throughout. Nothing lost: every pod the API accepted ends Running
 * with exactly one sandbox and one container, every deleted one is gone from the API and the
 * runtime. Printed per restart: the outage (kill to API healthy) and the convergence time after
 * it; duplicates, orphans and containers restarted by the outage, each of which must be 0.
 * `FAULTS_SEED=<seed>` repeats a run's schedule.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createNamespace, requireCluster } from '../e2e/helpers.js';
import { convergenceProblems } from '../faults/census.js';
import { clusterUp, daemonPid, ensureClusterUp, killDaemon } from '../faults/harness.js';
import { churnInRounds, describeRound, restartedByFaults } from '../faults/rounds.js';
import { minMedianMax, runSeed } from '../faults/seeded.js';
import { deleteNamespaceAndWait } from '../faults/state.js';
import { describeTotals } from './figures.js';

const RESTARTS = 5;

describe(`the API server restarted ${RESTARTS} times during a 100-pod create/delete churn`, () => {
  const seed = runSeed();
  let namespace = '';
  let agentPid: number | undefined;

  before(async () => {
    requireCluster();
    await ensureClusterUp();
    agentPid = await daemonPid('nodelet');
    namespace = await createNamespace('scale-api');
  });

  after(async () => {
    await ensureClusterUp();
    if (namespace !== '') await deleteNamespaceAndWait(namespace, 300_000);
  });

  it('loses nothing and converges after every restart: no duplicate sandbox, no orphan, no container restarted, the same agent', async (t) => {
    t.diagnostic(`seed ${seed} (FAULTS_SEED=${seed} repeats this schedule)`);
    const heldMs: number[] = [];
    const outcome = await churnInRounds(
      { namespace, seed, rounds: RESTARTS, createBefore: 20, createDuring: 0, maxDeleteBefore: 8, deleteDuring: 0, maxDelayMs: 5000, convergeTimeoutMs: 240_000 },
      {
        inject: async () => {
          await killDaemon('kube-apiserver');
        },
        recover: async (_round, random) => {
          const hold = random.int(5_000, 15_000);
          heldMs.push(hold);
          await new Promise((resolve) => setTimeout(resolve, hold));
          await clusterUp();
          return {};
        },
        apiUpDuringFault: false,
        mayAbandonStarts: false,
      },
    );
    for (const record of outcome.records) t.diagnostic(describeRound(record));
    const outages = outcome.records.map((r) => r.outageMs);
    const convergence = outcome.records.map((r) => r.convergedAfterRecoverMs);
    t.diagnostic(`outage (kill to the API server healthy again, up.sh returned): ${minMedianMax(outages)} (each: ${outages.join(', ')}; held down before up.sh: ${heldMs.join(', ')} ms)`);
    t.diagnostic(`convergence after the API server was back, per restart: ${minMedianMax(convergence)} (each: ${convergence.join(', ')})`);
    t.diagnostic(describeTotals(outcome));

    assert.equal(outcome.records.length, RESTARTS);
    assert.equal(outcome.createdTotal, 100);
    assert.equal(await daemonPid('nodelet'), agentPid, 'the agent is the same process throughout');
    assert.deepEqual(outcome.witness.duplicates(), [], 'no pod ever had a second sandbox');
    assert.deepEqual(outcome.witness.abandonedAtCreation(), [], 'the runtime ran throughout: no sandbox was left half-made');
    assert.deepEqual(outcome.records.filter((r) => r.damage.duplicateSandboxes + r.damage.orphanSandboxes + r.damage.orphanContainers > 0).map((r) => r.round), []);
    assert.equal(restartedByFaults(outcome.records), 0, 'no container running at an outage was restarted');
    assert.deepEqual(outcome.records.flatMap((r) => r.ledgerProblems.map((p) => `round ${r.round}: ${p}`)), []);
    assert.ok(outcome.records.reduce((n, r) => n + r.ledger.runningAtFault, 0) > 0);
    // A start an earlier kill interrupted leaves its StartError instance beside the running one (kept by container GC).
    assert.deepEqual(await convergenceProblems(outcome.expectation, outcome.lastAtFault), []);
  });
});
