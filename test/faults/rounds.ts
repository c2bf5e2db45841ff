/**
 * A create/delete churn in rounds with one fault per round, for the fault campaign at scale
 * (`test/faults-scale/`):
 *
 *   round r: create `createBefore` pods (one `kubectl create`) and delete 0…`maxDeleteBefore` of
 *     the live ones ──► wait a seeded random 0…`maxDelayMs` (so the fault lands anywhere in the
 *     agent's work on them: before it saw them, mid-start, mid-kill, after)
 *     ──► inject the fault, record the runtime (every sandbox and container, any state)
 *     ──► while it lasts, if the API answers: create `createDuring` and delete `deleteDuring` more
 *     ──► recover ──► wait until the namespace has converged (timed) ──► restart ledger vs. the fault
 *
 * Every round ends converged, so each fault has its own convergence time and ledger. Every runtime
 * reading (at the fault and each convergence poll) goes to a `SandboxWitness`, so a second sandbox
 * of a pod counts even if it was removed again before the round ended. The schedule (delays, the
 * pods deleted) comes from the seed: the same seed repeats a run's schedule (the agent's timing
 * is the machine's).
 */
import type { V1Pod } from '@kubernetes/client-node';
import { eventually, kubectl } from '../e2e/helpers.js';
import { SandboxWitness, countDamage, ledgerOf, problemsOf, type DamageCounts, type Expectation, type LedgerSummary } from './census.js';
import { createInBatches } from './churn.js';
import { SeededRandom } from './seeded.js';
import { listPods, runtimeOfNamespace, type RuntimeView } from './state.js';

export interface RoundsPlan {
  readonly namespace: string;
  readonly seed: number;
  readonly rounds: number;
  /** Pods created at the start of each round, and while the fault lasts (when the API answers). */
  readonly createBefore: number;
  readonly createDuring: number;
  /** Live pods deleted at the start of each round (a seeded 0…max), and exactly this many while the fault lasts. */
  readonly maxDeleteBefore: number;
  readonly deleteDuring: number;
  /** The fault is injected a seeded 0…maxDelayMs after the round's requests returned. */
  readonly maxDelayMs: number;
  /** How long one round may take to converge before the campaign fails. */
  readonly convergeTimeoutMs: number;
}

/** What one round's fault did; `recover` says when the restarted process started, if it knows. */
export interface Recovery {
  /** `Date.now()` when the restarted process started (10 ms resolution), when a process was restarted. */
  readonly processStartedAtMs?: number;
}

/** The fault of every round. */
export interface RoundFault {
  /** Breaks the component; resolves once it is down. */
  inject(round: number): Promise<void>;
  /** Brings it back (the fault's own random choices, such as how long it lasts, draw from `random`). */
  recover(round: number, random: SeededRandom): Promise<Recovery>;
  /** Whether the API answers while the fault lasts, so pods can be created and deleted meanwhile. */
  readonly apiUpDuringFault: boolean;
  /**
   * Whether the fault may leave a start in flight abandoned (the agent or the runtime died): a
   * container created but not started at the fault may then be replaced, or fail with StartError
   * and be replaced. A container running at the fault must be kept whatever the fault.
   */
  readonly mayAbandonStarts: boolean;
  /**
   * The fault kills the agent: the runtime is recorded at the end of the fault (right before
   * `recover`), not right after `inject`, as calls the agent had in flight still complete in the
   * runtime after its death and nothing else changes it meanwhile (see `ChurnFault.recordRuntime`).
   */
  readonly agentDies?: boolean;
}

/** One round's figures. */
export interface RoundRecord {
  readonly round: number;
  /** How long after the round's requests the fault was injected. */
  readonly delayMs: number;
  readonly created: number;
  readonly deleted: number;
  /** Sandboxes and containers of the namespace in the runtime at the fault (any state; see `RoundFault.agentDies`). */
  readonly atFault: { readonly sandboxes: number; readonly containers: number; readonly runningContainers: number };
  /** From the fault injected to `recover` returned. */
  readonly outageMs: number;
  /** Converged this long after `recover` returned, and after the restarted process started (when known). */
  readonly convergedAfterRecoverMs: number;
  readonly convergedAfterStartMs: number | undefined;
  /** The namespace's damage once converged (all zero when converged). */
  readonly damage: DamageCounts;
  readonly ledger: LedgerSummary;
  readonly ledgerProblems: readonly string[];
}

export interface RoundsOutcome {
  readonly records: readonly RoundRecord[];
  readonly witness: SandboxWitness;
  readonly expectation: Expectation;
  /** Every pod name created over the run. */
  readonly createdTotal: number;
  /** The runtime at the last fault: a final census needs it to allow a dead instance of a start a fault interrupted. */
  readonly lastAtFault: RuntimeView;
}

/** The churn's desired state so far: pod names live and UIDs deleted. */
class Desired {
  private readonly live: string[] = [];
  private readonly deletedUids: string[] = [];
  created = 0;

  constructor(private readonly namespace: string) {}

  async create(names: readonly string[]): Promise<void> {
    if (names.length === 0) return;
    await createInBatches(this.namespace, names, { batchSize: names.length, pauseMs: 0 });
    this.live.push(...names);
    this.created += names.length;
  }

  /** Deletes `count` live pods chosen by `random` (without waiting); returns how many. */
  async deleteSome(count: number, random: SeededRandom): Promise<number> {
    const doomed = random.pick(this.live, count);
    if (doomed.length === 0) return 0;
    const uidByName = new Map((await listPods(this.namespace)).map((p) => [p.metadata?.name ?? '', p.metadata?.uid ?? '']));
    await kubectl(['delete', 'pod', '-n', this.namespace, '--wait=false', ...doomed]);
    for (const name of doomed) {
      this.live.splice(this.live.indexOf(name), 1);
      const uid = uidByName.get(name);
      if (uid === undefined || uid === '') throw new Error(`pod ${name} to delete has no UID in the API`);
      this.deletedUids.push(uid);
    }
    return doomed.length;
  }

  expectation(): Expectation {
    return { namespace: this.namespace, present: [...this.live], deletedUids: [...this.deletedUids] };
  }
}

function names(round: number, from: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `r${String(round).padStart(2, '0')}-${from + i}`);
}

/** One reading of a namespace: its pods in the API, everything of it in the runtime. */
export interface Reading {
  readonly pods: readonly V1Pod[];
  readonly runtime: RuntimeView;
}

/**
 * Polls until the namespace matches the expectation (`atFault`: see `convergenceProblems`),
 * showing every runtime reading to the witness; resolves with the converged reading, rejects with
 * the problems after `timeoutMs`.
 */
export async function convergeWitnessed(expectation: Expectation, atFault: RuntimeView, witness: SandboxWitness, timeoutMs: number): Promise<Reading> {
  return eventually(`${expectation.namespace} to converge`, async () => {
    const [pods, runtime] = await Promise.all([listPods(expectation.namespace), runtimeOfNamespace(expectation.namespace)]);
    witness.observe(runtime);
    const problems = problemsOf(expectation, { pods, runtime }, atFault);
    if (problems.length > 0) throw new Error(`${problems.length} problems, e.g. ${problems.slice(0, 6).join('; ')}`);
    return { pods, runtime };
  }, timeoutMs);
}

interface Injected {
  readonly delayMs: number;
  readonly created: number;
  readonly deleted: number;
  readonly atFault: RuntimeView;
  readonly injectedAtMs: number;
}

/** The round up to the fault: requests, the seeded delay, the fault, the runtime as it left it. */
async function roundToFault(ctx: { plan: RoundsPlan; fault: RoundFault; desired: Desired; random: SeededRandom; witness: SandboxWitness }, round: number): Promise<Injected> {
  const { plan, fault, desired, random } = ctx;
  const deleteCount = random.int(0, plan.maxDeleteBefore);
  const delayMs = random.int(0, plan.maxDelayMs);
  await desired.create(names(round, 0, plan.createBefore));
  let deleted = await desired.deleteSome(deleteCount, random);
  await new Promise((resolve) => setTimeout(resolve, delayMs));
  await fault.inject(round);
  const injectedAtMs = Date.now();
  const afterInject = fault.agentDies === true ? undefined : await runtimeOfNamespace(plan.namespace);
  let created = plan.createBefore;
  if (fault.apiUpDuringFault) {
    await desired.create(names(round, plan.createBefore, plan.createDuring));
    created += plan.createDuring;
    deleted += await desired.deleteSome(plan.deleteDuring, random);
  }
  const atFault = afterInject ?? (await runtimeOfNamespace(plan.namespace));
  ctx.witness.observe(atFault);
  return { delayMs, created, deleted, atFault, injectedAtMs };
}

/** Runs the rounds (see the file header); rejects at the first round that does not converge in time. */
export async function churnInRounds(plan: RoundsPlan, fault: RoundFault): Promise<RoundsOutcome> {
  const ctx = { plan, fault, desired: new Desired(plan.namespace), random: new SeededRandom(plan.seed), witness: new SandboxWitness() };
  const records: RoundRecord[] = [];
  let lastAtFault: RuntimeView = { sandboxes: [], containers: [] };
  for (let round = 0; round < plan.rounds; round++) {
    const injected = await roundToFault(ctx, round);
    lastAtFault = injected.atFault;
    const recovery = await fault.recover(round, ctx.random);
    const recoveredAtMs = Date.now();
    const expectation = ctx.desired.expectation();
    let now;
    try {
      now = await convergeWitnessed(expectation, injected.atFault, ctx.witness, plan.convergeTimeoutMs);
    } catch (error) {
      throw new Error(`round ${round} of seed ${plan.seed} (fault ${injected.delayMs} ms after its requests): ${error instanceof Error ? error.message : String(error)}`);
    }
    const convergedAtMs = Date.now();
    const ledger = ledgerOf(now, injected.atFault, fault.mayAbandonStarts);
    records.push({
      round,
      delayMs: injected.delayMs,
      created: injected.created,
      deleted: injected.deleted,
      atFault: {
        sandboxes: injected.atFault.sandboxes.length,
        containers: injected.atFault.containers.length,
        runningContainers: injected.atFault.containers.filter((c) => c.state === 'CONTAINER_RUNNING').length,
      },
      outageMs: recoveredAtMs - injected.injectedAtMs,
      convergedAfterRecoverMs: convergedAtMs - recoveredAtMs,
      convergedAfterStartMs: recovery.processStartedAtMs === undefined ? undefined : convergedAtMs - recovery.processStartedAtMs,
      damage: countDamage(now.pods, now.runtime),
      ledger: ledger.summary,
      ledgerProblems: ledger.problems,
    });
  }
  return { records, witness: ctx.witness, expectation: ctx.desired.expectation(), createdTotal: ctx.desired.created, lastAtFault };
}

/** Containers running at a round's fault that were not kept (replaced or restarted), over every round. */
export function restartedByFaults(records: readonly RoundRecord[]): number {
  return records.reduce((sum, r) => sum + r.ledger.runningAtFault - r.ledger.keptRunning, 0);
}

/** One line per round, for the test's printed figures. */
export function describeRound(r: RoundRecord): string {
  const fromStart = r.convergedAfterStartMs === undefined ? '' : `, ${r.convergedAfterStartMs} ms after the new process started`;
  return (
    `round ${r.round}: fault ${r.delayMs} ms after creating ${r.created} and deleting ${r.deleted} pods; at the fault ${r.atFault.sandboxes} sandboxes, ${r.atFault.containers} containers (${r.atFault.runningContainers} running);` +
    ` outage ${r.outageMs} ms; converged ${r.convergedAfterRecoverMs} ms after recovery${fromStart};` +
    ` duplicates ${r.damage.duplicateSandboxes}, orphans ${r.damage.orphanSandboxes + r.damage.orphanContainers}, running containers restarted ${r.ledger.runningAtFault - r.ledger.keptRunning} of ${r.ledger.runningAtFault},` +
    ` created-not-started ${r.ledger.createdAtFault} (${r.ledger.createdStarted} started, ${r.ledger.createdReplaced} replaced, ${r.ledger.createdStartFailed} StartError+replaced), ledger problems ${r.ledgerProblems.length}`
  );
}
