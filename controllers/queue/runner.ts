/**
 * One run of a reconcile job: call the handler, turn its settlement into the next step (see
 * `policy.ts`), record the run on the job, and carry the step out in BullMQ terms.
 */
import { setMaxListeners } from 'node:events';
import { DelayedError, ErrorCode, UnrecoverableError } from 'bullmq';
import type { Job } from 'bullmq';
import type { Logger } from 'pino';
import { FailureCounter, outcomeOf, planNextRun } from './policy.js';
import type { NextStep, RunOutcome, RunPlan } from './policy.js';
import type { BackoffPolicy } from '../../util/backoff.js';
import type { Clock } from '../../util/clock.js';
import { RunPreemption } from './preemption.js';
import { RunSlots } from './run-slots.js';
import type { ReconcileJobData } from './redis.js';
import type { PodKey } from '../../util/pod-key.js';
import type { Reconciler, ReconcileResult } from '../../util/reconcile.js';

/** What the queue records about one run: a job log line per run, and the job's return value. */
export interface RunRecord {
  /** 1 for the job's first run; more when the job was requeued, retried or recovered after a stall. */
  readonly run: number;
  /** Why the job was enqueued (the event that created it). */
  readonly reason: string;
  /** The UID's attempt number: 1 + its consecutive failures before this run. */
  readonly attempt: number;
  readonly outcome: RunOutcome['kind'];
  readonly startedAt: string;
  readonly durationMs: number;
  /** When the job runs again (requeue-after or backoff), in milliseconds from the end of this run. */
  readonly nextRunInMs?: number;
  /** The error's message, for `error` and `terminal`. */
  readonly error?: string;
}

/** A job failed because its handler threw a terminal error; the 'failed' event need not log it again. */
export class TerminalRunFailure extends UnrecoverableError {
  constructor(message: string) {
    super(message);
    this.name = 'TerminalRunFailure';
  }
}

/** One finished run of a reconcile job, for the queue's metrics. */
export interface RunMetric {
  readonly outcome: RunOutcome['kind'];
  readonly seconds: number;
  /** The run failed and the job runs again after a backoff: a reconcile retry. */
  readonly retry: boolean;
}

/** Receives every finished run (job durations by outcome, reconcile retries); must not throw. */
export interface ReconcileRunMetrics {
  runFinished(run: RunMetric): void;
}

/** What {@link createProcessor} needs. */
export interface RunnerDeps {
  readonly reconciler: Reconciler;
  readonly failures: FailureCounter;
  readonly backoff: BackoffPolicy;
  readonly clock: Clock;
  readonly logger: Logger;
  /** See `dropPendingNextIfDelayed` in `redis.ts`. */
  readonly dropPendingNextIfDelayed: (job: Job<ReconcileJobData>) => Promise<boolean>;
  readonly metrics?: ReconcileRunMetrics;
  /** Where a UID's run in flight can be preempted; default: a registry of its own (nothing preempts). */
  readonly preemption?: RunPreemption;
  /** The concurrency budget every run takes a slot of while it runs (`run-slots.ts`); default: no limit. */
  readonly slots?: RunSlots;
}

/** The job processor passed to the BullMQ Worker; declares three parameters so BullMQ passes a signal. */
export type ReconcileProcessor = (
  job: Job<ReconcileJobData, RunRecord>,
  token: string | undefined,
  signal: AbortSignal | undefined,
) => Promise<RunRecord>;

/**
 * Runs work for one key at a time within this process: a second run for a key waits for the first.
 * Redis deduplication already guarantees one job per UID; this guard keeps the guarantee when
 * Redis loses that state mid-run (a flush or failover drops the deduplication key while the job
 * runs, and the resync enqueues the UID again).
 */
export class KeyedSerializer {
  private readonly tails = new Map<string, Promise<unknown>>();

  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const current = previous.catch(() => undefined).then(work);
    this.tails.set(key, current);
    try {
      return await current;
    } finally {
      if (this.tails.get(key) === current) this.tails.delete(key);
    }
  }

  /** Keys with work running or waiting. */
  get size(): number {
    return this.tails.size;
  }
}

/**
 * Lifts Node's listener warning (10) off a reconcile's signal. Each CRI call and hook in flight
 * listens on it and stops listening when it settles (`cri/transport.ts`, `hooks/run-hook.ts`), so
 * the count follows the pod's concurrent calls: one per container when its containers are observed,
 * started or stopped together, and a pod may have any number of containers. A pod with more than
 * ten made Node print a "possible memory leak" warning to the agent's stderr on every such sync.
 */
function allowConcurrentCalls(signal: AbortSignal): void {
  setMaxListeners(0, signal);
}

/** One run of a UID under this process's per-UID guard, settled and planned. */
interface GuardedRun {
  readonly ref: PodKey;
  readonly failuresBefore: number;
  readonly attempt: number;
  readonly outcome: RunOutcome;
  readonly plan: RunPlan;
  readonly startedMs: number;
  readonly durationMs: number;
}

/** What {@link createRunner} returns: the job processor, and a run of a UID without a job. */
export interface Runner {
  /** The processor the BullMQ Worker calls for each job. */
  readonly processor: ReconcileProcessor;
  /**
   * Reconciles `ref` in this process without a job (the resync of a UID that has none, see
   * `resync.ts`): under the same per-UID guard as the jobs' runs (a job of the UID taken meanwhile
   * waits for it), preemptible, aborted by `signal`. Only a plain success counts: it forgets the
   * UID's backoff. Any other outcome leaves the failure count alone and is returned for the caller
   * to hand the UID to the queue, whose job's run then applies the policy. Never rejects.
   */
  readonly runWithoutJob: (ref: PodKey, reason: string, signal: AbortSignal) => Promise<RunOutcome['kind']>;
}

/** Builds the processor that runs one job of the reconcile queue. */
export function createProcessor(deps: RunnerDeps): ReconcileProcessor {
  return createRunner(deps).processor;
}

/** Builds the job processor and the job-less run, sharing one per-UID guard. */
export function createRunner(deps: RunnerDeps): Runner {
  const perUid = new KeyedSerializer();
  const preemption = deps.preemption ?? new RunPreemption();
  const slots = deps.slots ?? new RunSlots(Number.POSITIVE_INFINITY);
  const guarded = async (ref: PodKey, reason: string, signal: AbortSignal | undefined): Promise<GuardedRun> => {
    const failuresBefore = deps.failures.get(ref.uid);
    const attempt = failuresBefore + 1;
    const startedMs = deps.clock.now();
    // Preemptible only once it runs: a run still waiting behind the UID's previous one, or for a slot, reads the newest state anyway.
    const reconcile = (runSignal: AbortSignal): Promise<ReconcileResult> => deps.reconciler.reconcile(ref, { reason, attempt, signal: runSignal });
    const { settled, preempted } = await perUid.run(ref.uid, () => slots.run(() => runPreemptible(preemption, ref.uid, signal, reconcile)));
    const durationMs = deps.clock.now() - startedMs;
    const outcome = outcomeOf(settled, preempted);
    return { ref, failuresBefore, attempt, outcome, plan: planNextRun(outcome, failuresBefore, deps.backoff), startedMs, durationMs };
  };
  const processor: ReconcileProcessor = async (job, token, signal) => {
    const { uid, namespace, name, reason } = job.data;
    const run = await guarded({ uid, namespace, name }, reason, signal);
    const { outcome, plan } = run;
    deps.failures.set(uid, plan.failures);
    deps.metrics?.runFinished({ outcome: outcome.kind, seconds: run.durationMs / 1000, retry: outcome.kind === 'error' && plan.next.kind === 'run-again' });
    const record = runRecord({ job, attempt: run.attempt, outcome, next: plan.next, startedMs: run.startedMs, durationMs: run.durationMs });
    const logger = deps.logger.child({ podUID: uid, pod: `${namespace}/${name}`, jobId: job.id });
    logRun(logger, record, outcome);
    await job.log(JSON.stringify(record)).catch((err: unknown) => {
      logger.debug({ err }, 'could not append the run record to the job log');
    });
    switch (plan.next.kind) {
      case 'complete':
        return record;
      case 'run-again':
        await runAgainLater(job, { token, delayMs: plan.next.delayMs, deps, logger });
        throw new DelayedError(`runs again in ${plan.next.delayMs} ms`);
      case 'fail':
        throw new TerminalRunFailure(`terminal reconcile error: ${record.error ?? 'unknown'}`);
    }
  };
  const runWithoutJob = async (ref: PodKey, reason: string, signal: AbortSignal): Promise<RunOutcome['kind']> => {
    const run = await guarded(ref, reason, signal);
    if (run.outcome.kind === 'success') deps.failures.set(ref.uid, 0);
    deps.metrics?.runFinished({ outcome: run.outcome.kind, seconds: run.durationMs / 1000, retry: false });
    logRunWithoutJob(deps.logger.child({ podUID: ref.uid, pod: `${ref.namespace}/${ref.name}` }), { reason, run });
    return run.outcome.kind;
  };
  return { processor, runWithoutJob };
}

/** A job-less run that did not simply succeed is news at debug level: the job it hands over to logs its own outcome. */
function logRunWithoutJob(logger: Logger, input: { readonly reason: string; readonly run: GuardedRun }): void {
  const { reason, run } = input;
  const fields = { reason, outcome: run.outcome.kind, durationMs: run.durationMs, attempt: run.attempt };
  if (run.outcome.kind === 'success') {
    logger.debug(fields, 'reconciled without a job');
    return;
  }
  const err = run.outcome.kind === 'error' || run.outcome.kind === 'terminal' ? run.outcome.error : undefined;
  logger.debug({ ...fields, err }, 'a reconcile without a job did not simply succeed; handing the pod to the queue');
}

/** Runs the handler under a signal that aborts with the queue's (lost lock, shutdown) or on preemption. */
async function runPreemptible(
  preemption: RunPreemption,
  uid: string,
  queueSignal: AbortSignal | undefined,
  run: (signal: AbortSignal) => Promise<ReconcileResult>,
): Promise<{ readonly settled: Awaited<ReturnType<typeof settle>>; readonly preempted: boolean }> {
  const preemptible = preemption.begin(uid);
  try {
    const signal = queueSignal === undefined ? preemptible.signal : AbortSignal.any([queueSignal, preemptible.signal]);
    allowConcurrentCalls(signal);
    const settled = await settle(() => run(signal));
    return { settled, preempted: preemptible.signal.aborted };
  } finally {
    preemptible.end();
  }
}

async function settle(
  run: () => Promise<ReconcileResult>,
): Promise<{ readonly value: ReconcileResult } | { readonly error: unknown }> {
  try {
    return { value: await run() };
  } catch (error) {
    return { error };
  }
}

function runRecord(input: {
  readonly job: Job<ReconcileJobData>;
  readonly attempt: number;
  readonly outcome: RunOutcome;
  readonly next: NextStep;
  readonly startedMs: number;
  readonly durationMs: number;
}): RunRecord {
  const { job, attempt, outcome, next, startedMs, durationMs } = input;
  return {
    run: Math.max(1, job.attemptsStarted),
    reason: job.data.reason,
    attempt,
    outcome: outcome.kind,
    startedAt: new Date(startedMs).toISOString(),
    durationMs,
    ...(next.kind === 'run-again' ? { nextRunInMs: next.delayMs } : {}),
    ...(outcome.kind === 'error' || outcome.kind === 'terminal' ? { error: messageOf(outcome.error) } : {}),
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function logRun(logger: Logger, record: RunRecord, outcome: RunOutcome): void {
  switch (outcome.kind) {
    case 'success':
    case 'requeue':
      logger.debug({ run: record }, 'reconciled');
      return;
    case 'error':
      logger.warn({ run: record, err: outcome.error }, 'reconcile failed; retrying with backoff');
      return;
    case 'terminal':
      logger.error({ run: record, err: outcome.error }, 'reconcile failed terminally; not retrying');
      return;
    case 'preempted':
      logger.info({ run: record }, 'reconcile preempted by a newer event; running again now');
      return;
  }
}

/**
 * Moves the running job back to delayed (atomically, keeping its deduplication key, so no other
 * job of the UID can start meanwhile). If an event arrived during this run, it must not wait out
 * the delay: the event's pending payload is dropped and this job promoted, so it runs now with
 * the newest state. BullMQ's wall clock is used for the due time, as BullMQ itself does.
 */
async function runAgainLater(
  job: Job<ReconcileJobData>,
  options: { readonly token: string | undefined; readonly delayMs: number; readonly deps: RunnerDeps; readonly logger: Logger },
): Promise<void> {
  const { token, delayMs, deps, logger } = options;
  await job.moveToDelayed(Date.now() + delayMs, token);
  if (!(await deps.dropPendingNextIfDelayed(job))) return;
  try {
    await job.promote();
    logger.debug('an event arrived during the run; running again now instead of after the delay');
  } catch (err) {
    // It left the delayed set on its own (due already); it runs after the event either way.
    if (!isNotInStateError(err)) throw err;
  }
}

function isNotInStateError(err: unknown): boolean {
  return err instanceof Error && 'code' in err && err.code === ErrorCode.JobNotInState;
}

/** The runs in flight in this process, so shutdown can wait for them without BullMQ's help. */
export class InFlightRuns {
  private readonly runs = new Set<Promise<unknown>>();

  /** Tracks `run` until it settles; returns it unchanged. */
  track<T>(run: Promise<T>): Promise<T> {
    this.runs.add(run);
    const forget = (): void => {
      this.runs.delete(run);
    };
    run.then(forget, forget);
    return run;
  }

  /** Resolves when no run is in flight (runs started meanwhile are waited for too). */
  async idle(): Promise<void> {
    while (this.runs.size > 0) await Promise.allSettled([...this.runs]);
  }

  get size(): number {
    return this.runs.size;
  }
}
