/**
 * Node-wide container log rotation, as the kubelet's container log manager: every 10 s (the
 * kubelet's `containerLogMonitorInterval`) each running container of this node whose log file
 * (the runtime's `ContainerStatus.log_path`) has reached the policy's size is rotated:
 * leftovers and the oldest rotated files removed, the kept ones gzipped, the current file renamed
 * to `<n>.log.<YYYYMMDD-HHMMSS>`, then the runtime asked (CRI `ReopenContainerLog`) to open a fresh
 * `<n>.log`. If the runtime refuses, the file is renamed back so nothing is lost and the next round
 * tries again (`rotation-plan.ts` has the rules).
 *
 * - Only running containers: an exited one writes nothing more. Only containers labelled with this
 *   node, and only log paths under the pod log root.
 * - A current file that is missing (a rename whose reopen never happened, say after a crash) is
 *   reopened first, as the kubelet does.
 * - Containers are rotated one at a time (the kubelet's default of one worker). A container that
 *   fails is logged and the others still rotate; the round then counts as failed, and the loop
 *   retries at the next tick.
 * - A new policy (flags, then NodeAgent `spec.logRotation`) takes effect at once: a round runs.
 * - Removing a container's logs with the container is the garbage collector's (`controllers/gc/`).
 */
import path from 'node:path';
import type { Logger } from 'pino';
import type { ContainerLogRuntime, RuntimeService } from '../../cri/types.js';
import { nodeSelector } from '../../reconcilers/model/runtime-labels.js';
import type { Clock } from '../../util/clock.js';
import { createPeriodicLoop, type PeriodicLoop } from '../../util/periodic-loop.js';
import { compressFile, fileSize, listNames, removeFile, renameFile } from './rotation-files.js';
import { isUnder } from '../../reconcilers/model/container-logs.js';
import { planRotation, rotationTimestamp, type RotationPlan } from './rotation-plan.js';

/** The kubelet's default `containerLogMonitorInterval`. */
export const LOG_ROTATION_PERIOD_MS = 10_000;

/** When and how much: `--container-log-max-size`/`--container-log-max-files`, overridden by NodeAgent `spec.logRotation`. */
export interface LogRotationPolicy {
  /** A log file at or above this many bytes is rotated. */
  readonly maxSizeBytes: number;
  /** Files kept per container, the current one included (at least 2). */
  readonly maxFiles: number;
}

/** What the manager asks of the runtime. */
export type LogRotationRuntime = Pick<RuntimeService, 'listContainers' | 'containerStatus'> & ContainerLogRuntime;

/** Options of {@link LogRotationManager}. */
export interface LogRotationManagerOptions {
  readonly runtime: LogRotationRuntime;
  readonly nodeName: string;
  /** The pod log root (`--pod-log-dir`): nothing outside it is touched. */
  readonly podLogDir: string;
  readonly policy: LogRotationPolicy;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly periodMs?: number;
}

/** Thrown at the end of a round in which some containers' rotations failed (each was logged). */
export class LogRotationError extends Error {
  constructor(readonly failures: number) {
    super(`container log rotation: ${failures} container(s) failed`);
    this.name = 'LogRotationError';
  }
}

export function isLogRotationError(err: unknown): err is LogRotationError {
  return err instanceof LogRotationError;
}

/** What one container's check did. */
export type RotationOutcome = 'rotated' | 'below-size' | 'skipped';

export class LogRotationManager {
  private policy: LogRotationPolicy;
  private readonly loop: PeriodicLoop;

  constructor(private readonly options: LogRotationManagerOptions) {
    this.policy = options.policy;
    this.loop = createPeriodicLoop({
      name: 'container-log-rotation',
      periodMs: options.periodMs ?? LOG_ROTATION_PERIOD_MS,
      firstRun: 'after-period',
      clock: options.clock,
      logger: options.logger,
      run: () => this.rotateAll(),
    });
  }

  /** Starts the checks; the first runs one period after start. */
  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  currentPolicy(): LogRotationPolicy {
    return this.policy;
  }

  /** Applies a new policy and checks every container with it now. */
  setPolicy(policy: LogRotationPolicy): void {
    this.policy = policy;
    void this.loop.runNow();
  }

  /** Runs a round now (after a round in flight); true when it succeeded. */
  rotateNow(): Promise<boolean> {
    return this.loop.runNow();
  }

  /** One round over every running container of this node. */
  async rotateAll(): Promise<void> {
    const running = await this.options.runtime.listContainers({ state: 'CONTAINER_RUNNING', labelSelector: nodeSelector(this.options.nodeName) });
    let failures = 0;
    for (const container of running) {
      try {
        await this.rotateContainer(container.id);
      } catch (err: unknown) {
        failures += 1;
        this.options.logger.warn({ err, containerId: container.id }, 'container log rotation failed; retrying next round');
      }
    }
    if (failures > 0) throw new LogRotationError(failures);
  }

  /** Checks one container's log and rotates it when it reached the size. */
  async rotateContainer(containerId: string): Promise<RotationOutcome> {
    const { runtime, podLogDir } = this.options;
    const logPath = (await runtime.containerStatus(containerId)).logPath;
    if (logPath === '' || !isUnder(podLogDir, logPath)) return 'skipped';
    let size = await fileSize(logPath);
    if (size === undefined) {
      // Renamed away without a reopen (an agent killed mid-rotation): have the runtime make it again.
      await runtime.reopenContainerLog(containerId);
      size = (await fileSize(logPath)) ?? 0;
    }
    const { maxSizeBytes, maxFiles } = this.policy;
    if (size < maxSizeBytes) return 'below-size';
    const dir = path.dirname(logPath);
    const logName = path.basename(logPath);
    const timestamp = rotationTimestamp(new Date(this.options.clock.now()));
    const plan = planRotation({ logName, siblings: await listNames(dir), maxFiles, timestamp });
    if (plan === undefined) return 'skipped';
    await this.carryOut(containerId, dir, logName, plan);
    this.options.logger.info({ containerId, logPath, sizeBytes: size, maxSizeBytes, rotatedTo: plan.rotateTo, removed: plan.removeExcess.length, compressed: plan.compress.length }, 'rotated container log');
    return 'rotated';
  }

  private async carryOut(containerId: string, dir: string, logName: string, plan: RotationPlan): Promise<void> {
    for (const name of [...plan.removeUnused, ...plan.removeExcess]) await removeFile(dir, name);
    for (const name of plan.compress) await compressFile(dir, name);
    await renameFile(dir, logName, plan.rotateTo);
    try {
      await this.options.runtime.reopenContainerLog(containerId);
    } catch (err: unknown) {
      // Back to its name so the runtime's open file is the log again, and the next round retries.
      await renameFile(dir, plan.rotateTo, logName).catch((renameErr: unknown) => {
        this.options.logger.error({ err: renameErr, containerId, from: plan.rotateTo, to: logName }, 'could not rename a rotated log back after a failed reopen');
      });
      throw err;
    }
  }
}
