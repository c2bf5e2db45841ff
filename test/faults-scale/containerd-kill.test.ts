/**
 * Fault campaign at scale: containerd killed with SIGKILL in the middle of a 100-pod
 * create/delete churn (`../faults/churn.ts`: 100 pods created in batches of 10, 1 s apart;
 * containerd is killed once a seeded 20–60 of them run, creation going on; 40 are deleted and 10
 * more created while it is down; after a seeded 3–10 s `up.sh` starts it again). The agent runs
 * throughout (the shims, and so the containers, outlive containerd). Printed: the outage, the
 * convergence time, duplicate sandboxes (over every runtime reading), orphans and containers
 * restarted by the kill (the restart ledger), each of which must be 0.
 * `FAULTS_SEED=<seed>` repeats a run's schedule.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createNamespace, requireCluster } from '../e2e/helpers.js';
import { countDamage, describeLedger, ledgerOf, SandboxWitness } from '../faults/census.js';
import { churnThrough } from '../faults/churn.js';
import { clusterUp, daemonPid, ensureClusterUp, killDaemon } from '../faults/harness.js';
import { convergeWitnessed } from '../faults/rounds.js';
import { SeededRandom, runSeed } from '../faults/seeded.js';
import { deleteNamespaceAndWait, describeStates } from '../faults/state.js';

describe('containerd killed with SIGKILL during a 100-pod create/delete churn', () => {
  const seed = runSeed();
  let namespace = '';
  let agentPid: number | undefined;

  before(async () => {
    requireCluster();
    await ensureClusterUp();
    agentPid = await daemonPid('nodelet');
    namespace = await createNamespace('scale-ctrd');
  });

  after(async () => {
    await ensureClusterUp();
    if (namespace !== '') await deleteNamespaceAndWait(namespace, 300_000);
  });

  it('converges once containerd is back: no duplicate sandbox, no orphan, no running container restarted, the same agent', async (t) => {
    t.diagnostic(`seed ${seed} (FAULTS_SEED=${seed} repeats this schedule)`);
    const random = new SeededRandom(seed);
    const runningBeforeFault = random.int(20, 60);
    const downMs = random.int(3_000, 10_000);
    let killedAtMs = 0;
    const outcome = await churnThrough(
      { namespace, initial: 100, batchSize: 10, batchPauseMs: 1000, runningBeforeFault, toDelete: 40, extra: 10 },
      {
        inject: async () => {
          await killDaemon('containerd');
          killedAtMs = Date.now();
        },
        recover: async () => {
          await new Promise((resolve) => setTimeout(resolve, Math.max(0, killedAtMs + downMs - Date.now())));
          await clusterUp();
        },
        recordRuntime: 'before-inject',
      },
    );
    const witness = new SandboxWitness();
    witness.observe(outcome.atFault);
    const now = await convergeWitnessed(outcome.expectation, outcome.atFault, witness, 300_000);
    const convergedMs = Date.now() - outcome.recoveredAtMs;
    // The runtime died, not the agent: a start in flight may still have been failed (StartError) and replaced.
    const ledger = ledgerOf(now, outcome.atFault, true);
    const damage = countDamage(now.pods, now.runtime);
    const restarted = ledger.summary.runningAtFault - ledger.summary.keptRunning;
    t.diagnostic(
      `containerd killed once ${outcome.runningBeforeFault} pods ran (aimed at ${runningBeforeFault}); right before the kill the runtime had sandboxes: ${describeStates(outcome.atFault.sandboxes)}; containers: ${describeStates(outcome.atFault.containers)}`,
    );
    t.diagnostic(`outage (kill to up.sh returned) ${outcome.recoveredAtMs - killedAtMs} ms (held down ${downMs} ms before up.sh, which took ${outcome.recoverMs} ms); converged ${convergedMs} ms after up.sh returned`);
    t.diagnostic(
      `${outcome.expectation.present.length} pods live, ${outcome.expectation.deletedUids.length} deleted; duplicate sandboxes ${witness.duplicateCount} (over ${witness.observations} runtime readings), at the end ${damage.duplicateSandboxes}; sandboxes half-made when containerd died and replaced by the next attempt ${witness.abandonedAtCreation().length} (removed by container GC: none at the end); orphans ${damage.orphanSandboxes} sandboxes, ${damage.orphanContainers} containers; running containers restarted by the kill ${restarted}; ledger problems ${ledger.problems.length}`,
    );
    t.diagnostic(describeLedger(ledger.summary));

    assert.equal(await daemonPid('nodelet'), agentPid, 'the agent survived the runtime outage');
    assert.equal(outcome.expectation.present.length, 70);
    // A RunPodSandbox that containerd's death interrupted leaves a sandbox never ready, which the agent
    // replaces as the kubelet does (printed above); any other second sandbox is a duplicate.
    assert.deepEqual(witness.duplicates(), [], 'no pod ever had a second sandbox');
    assert.deepEqual(damage, { duplicateSandboxes: 0, orphanSandboxes: 0, orphanContainers: 0 });
    assert.deepEqual(ledger.problems, []);
    assert.equal(restarted, 0);
    assert.ok(ledger.summary.runningAtFault > 0, `${ledger.summary.runningAtFault} containers of kept pods ran at the kill`);
  });
});
