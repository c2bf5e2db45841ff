/**
 * Fault campaign at scale: the agent killed with SIGKILL 20 times at seeded random points of a
 * 100-pod create/delete churn (`../faults/rounds.ts`: 20 rounds; each creates 4 pods and deletes
 * 0–2 live ones, then the agent is killed 0–4 s later; while it is dead one more pod is created
 * and one deleted; `up.sh` starts it again from the same build; the round ends when the namespace
 * has converged). Printed per kill and over the run: convergence time, duplicate sandboxes (in
 * any state, over every runtime reading of the run), orphans, and containers restarted because
 * of the kill (the restart ledger against the runtime at the kill); every one of those must be 0.
 * `FAULTS_SEED=<seed>` repeats a run's schedule.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createNamespace, requireCluster } from '../e2e/helpers.js';
import { convergenceProblems } from '../faults/census.js';
import { ensureClusterUp, killDaemon } from '../faults/harness.js';
import { churnInRounds, describeRound, restartedByFaults } from '../faults/rounds.js';
import { minMedianMax, runSeed } from '../faults/seeded.js';
import { deleteNamespaceAndWait } from '../faults/state.js';
import { restoreHarnessAgent } from '../faults/step-kill.js';
import { describeTotals } from './figures.js';

const KILLS = 20;

describe(`the agent killed with SIGKILL ${KILLS} times during a 100-pod create/delete churn`, () => {
  const seed = runSeed();
  let namespace = '';

  before(async () => {
    requireCluster();
    await ensureClusterUp();
    namespace = await createNamespace('scale-kill');
  });

  after(async () => {
    await ensureClusterUp();
    if (namespace !== '') await deleteNamespaceAndWait(namespace, 300_000);
  });

  it('converges after every kill: no duplicate sandbox, no orphan, no running container restarted', async (t) => {
    t.diagnostic(`seed ${seed} (FAULTS_SEED=${seed} repeats this schedule)`);
    const killedPids: number[] = [];
    const outcome = await churnInRounds(
      { namespace, seed, rounds: KILLS, createBefore: 4, createDuring: 1, maxDeleteBefore: 2, deleteDuring: 1, maxDelayMs: 4000, convergeTimeoutMs: 240_000 },
      {
        inject: async () => {
          killedPids.push(await killDaemon('nodelet'));
        },
        recover: async () => {
          const restored = await restoreHarnessAgent({ prebuiltAgent: true });
          return { processStartedAtMs: restored.agentStartedAtMs };
        },
        apiUpDuringFault: true,
        mayAbandonStarts: true,
        agentDies: true,
      },
    );
    for (const record of outcome.records) t.diagnostic(describeRound(record));
    const fromStart = outcome.records.map((r) => r.convergedAfterStartMs ?? -1);
    t.diagnostic(`convergence after the new agent process started, per kill: ${minMedianMax(fromStart)} (each: ${fromStart.join(', ')})`);
    t.diagnostic(`convergence after up.sh returned, per kill: ${minMedianMax(outcome.records.map((r) => r.convergedAfterRecoverMs))}; kill to up.sh returned: ${minMedianMax(outcome.records.map((r) => r.outageMs))}`);
    t.diagnostic(describeTotals(outcome));

    assert.equal(outcome.records.length, KILLS);
    assert.equal(new Set(killedPids).size, KILLS, 'every kill hit another agent process');
    assert.equal(outcome.createdTotal, 100);
    assert.deepEqual(outcome.witness.duplicates(), [], 'no pod ever had a second sandbox');
    assert.deepEqual(outcome.witness.abandonedAtCreation(), [], 'the runtime ran throughout: no sandbox was left half-made');
    assert.deepEqual(outcome.records.filter((r) => r.damage.duplicateSandboxes + r.damage.orphanSandboxes + r.damage.orphanContainers > 0).map((r) => r.round), []);
    assert.equal(restartedByFaults(outcome.records), 0, 'no container running at a kill was restarted');
    assert.deepEqual(outcome.records.flatMap((r) => r.ledgerProblems.map((p) => `round ${r.round}: ${p}`)), []);
    // Containers ran at the kills: the ledger checked something.
    assert.ok(outcome.records.reduce((n, r) => n + r.ledger.runningAtFault, 0) > 0);
    // A start an earlier kill interrupted leaves its StartError instance beside the running one (kept by container GC).
    assert.deepEqual(await convergenceProblems(outcome.expectation, outcome.lastAtFault), []);
  });
});
