/**
 * Keeps one NodeAgent in view: reads it (creating it when missing), then watches it from the
 * version read, handing every newer version to `onObject`. Never throws and never gives up:
 *
 *   read ──► deliver ──► watch ◄─┐  clean close by the server (every `watchTimeoutSeconds`): watch
 *    ▲                     │     │  again from the last version seen
 *    │                     ├─────┘
 *    ├── relist period over, DELETED (the read creates it again), 410 Gone
 *    └── after backoff ◄── any error (API server down, CRD missing, forbidden)
 *
 * A relist every `relistPeriodMs` delivers the object again even when nothing changed: the
 * controller's periodic resync. One object is cheap to read, so every doubt is settled by reading it.
 */
import type { Logger } from 'pino';
import { apiStatusCode, isAlreadyExists, isGone, watchErrorStatusCode } from '../../util/api-errors.js';
import { backoffDelay, type BackoffPolicy } from '../../util/backoff.js';
import type { Clock, TimerHandle } from '../../util/clock.js';
import type { NodeAgentApi, WatchEventType, WatchHandle } from './api.js';
import { asNodeAgent, newNodeAgent, type NodeAgent } from './types.js';

/** Options of {@link createNodeAgentWatch}. */
export interface NodeAgentWatchOptions {
  readonly api: NodeAgentApi;
  /** The NodeAgent's name: the Node's. */
  readonly name: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Called with the object when read or created, for every watch event that changes it, and at every relist. Must not throw. */
  readonly onObject: (agent: NodeAgent) => void;
  /**
   * Delay after failures; default 1 s doubling to 30 s, jittered by 1.0 as client-go's reflector
   * (each delay anywhere in [d, 2d): a fleet that lost its API server at once comes back spread out).
   */
  readonly backoff?: BackoffPolicy;
  /** A number in [0, 1) for the backoff's jitter; default Math.random. */
  readonly random?: () => number;
  /** Read the object again this often; default 60 s. */
  readonly relistPeriodMs?: number;
  /** The server closes each watch after this long; default 25 s, under client-node's 30 s inactivity timeout. */
  readonly watchTimeoutSeconds?: number;
}

/** A running watch of one NodeAgent. */
export interface NodeAgentWatch {
  /** Starts reading and watching in the background. Starting twice does nothing. */
  start(): void;
  /** Stops; resolves once the loop has ended. */
  stop(): Promise<void>;
  /** True once the object was read and no error is being backed off from. */
  healthy(): boolean;
}

/** An ERROR event from the watch that is not a 410. */
export class NodeAgentWatchError extends Error {
  override readonly name = 'NodeAgentWatchError';
  constructor(readonly code: number | undefined) {
    super(`NodeAgent watch reported an error${code === undefined ? '' : ` (code ${code})`}`);
  }
}

/** True when `err` is a {@link NodeAgentWatchError}. */
export function isNodeAgentWatchError(err: unknown): err is NodeAgentWatchError {
  return err instanceof NodeAgentWatchError;
}

/** How one watch ended. */
type WatchEnd = { readonly kind: 'closed'; readonly resourceVersion: string } | { readonly kind: 'relist' } | { readonly kind: 'failed'; readonly err: unknown };

const DEFAULT_BACKOFF: BackoffPolicy = { initialMs: 1000, maxMs: 30_000, jitter: 1 };

/** `metadata.resourceVersion` of a watched object; bookmarks carry nothing else. */
function resourceVersionOf(object: unknown): string | undefined {
  if (typeof object !== 'object' || object === null || !('metadata' in object)) return undefined;
  const metadata = object.metadata;
  if (typeof metadata !== 'object' || metadata === null || !('resourceVersion' in metadata)) return undefined;
  return typeof metadata.resourceVersion === 'string' ? metadata.resourceVersion : undefined;
}

/** Reads the NodeAgent, creating it when missing (a create that races another is settled by reading). */
async function readOrCreate(api: NodeAgentApi, name: string, logger: Logger): Promise<NodeAgent> {
  const found = await api.get(name);
  if (found !== undefined) return found;
  try {
    const created = await api.create(newNodeAgent(name));
    logger.info({ nodeAgent: name }, 'created the NodeAgent for this node');
    return created;
  } catch (err: unknown) {
    if (!isAlreadyExists(err)) throw err;
    const again = await api.get(name);
    if (again === undefined) throw err;
    return again;
  }
}

class NodeAgentWatchLoop implements NodeAgentWatch {
  private readonly logger: Logger;
  private started = false;
  private stopped = false;
  private read = false;
  private failures = 0;
  private loop: Promise<void> | undefined;
  /** Ends whatever the loop waits for (a watch or a backoff sleep) when stopping. */
  private interrupt: (() => void) | undefined;

  constructor(private readonly options: NodeAgentWatchOptions) {
    this.logger = options.logger.child({ component: 'nodeagent-watch' });
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.interrupt?.();
    await this.loop;
  }

  healthy(): boolean {
    return this.started && !this.stopped && this.read && this.failures === 0;
  }

  private async run(): Promise<void> {
    while (!this.stopped) await this.cycle();
  }

  /** Read, deliver, watch until a relist is due; on any error, back off. */
  private async cycle(): Promise<void> {
    try {
      const agent = await readOrCreate(this.options.api, this.options.name, this.logger);
      if (this.failures > 0) this.logger.info({ failures: this.failures }, 'NodeAgent watch recovered');
      this.failures = 0;
      this.read = true;
      this.deliver(agent);
      await this.watchUntilRelist(agent);
    } catch (err: unknown) {
      this.failures += 1;
      const delayMs = backoffDelay(this.options.backoff ?? DEFAULT_BACKOFF, this.failures, this.options.random);
      // The first failure is news; the repeats of an outage are not.
      const level = this.failures === 1 ? 'warn' : 'debug';
      this.logger[level]({ err, code: apiStatusCode(err), failures: this.failures, retryInMs: delayMs }, 'NodeAgent read or watch failed; retrying');
      if (!this.stopped) await this.sleep(delayMs);
    }
  }

  private deliver(agent: NodeAgent): void {
    try {
      this.options.onObject(agent);
    } catch (err: unknown) {
      this.logger.error({ err }, 'NodeAgent handler threw');
    }
  }

  private sleep(ms: number): Promise<void> {
    const { clock } = this.options;
    return new Promise<void>((resolve) => {
      const timer: TimerHandle = clock.setTimeout(resolve, ms);
      this.interrupt = () => {
        clock.clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Watches from the version read until a relist is due; throws when a watch fails. */
  private async watchUntilRelist(agent: NodeAgent): Promise<void> {
    const { clock } = this.options;
    const relistAt = clock.now() + (this.options.relistPeriodMs ?? 60_000);
    let resourceVersion = agent.metadata.resourceVersion ?? '';
    while (!this.stopped && clock.now() < relistAt) {
      const end = await this.watchOnce(resourceVersion);
      if (end.kind === 'failed') throw end.err;
      if (end.kind === 'relist') return;
      resourceVersion = end.resourceVersion;
    }
  }

  /** Opens one watch from `resourceVersion` and resolves when it ends. */
  private async watchOnce(resourceVersion: string): Promise<WatchEnd> {
    let last = resourceVersion;
    let settle: (end: WatchEnd) => void = () => undefined;
    const ended = new Promise<WatchEnd>((resolve) => {
      settle = resolve;
    });
    const onEvent = (type: WatchEventType, object: unknown): void => {
      const end = this.onEvent(type, object);
      if (end === undefined) last = resourceVersionOf(object) ?? last;
      else settle(end);
    };
    const onEnd = (err: unknown): void => {
      if (err === undefined) settle({ kind: 'closed', resourceVersion: last });
      else settle(isGone(err) ? { kind: 'relist' } : { kind: 'failed', err });
    };
    this.interrupt = () => {
      settle({ kind: 'relist' });
    };
    let handle: WatchHandle | undefined;
    try {
      handle = await this.options.api.watch({ name: this.options.name, resourceVersion, timeoutSeconds: this.options.watchTimeoutSeconds ?? 25 }, { onEvent, onEnd });
    } catch (err: unknown) {
      settle({ kind: 'failed', err });
    }
    const end = await ended;
    handle?.stop();
    return end;
  }

  /** Handles one event; returns how the watch ends, or undefined to keep watching. */
  private onEvent(type: WatchEventType, object: unknown): WatchEnd | undefined {
    switch (type) {
      case 'ADDED':
      case 'MODIFIED': {
        const agent = asNodeAgent(object);
        if (agent !== undefined) this.deliver(agent);
        return undefined;
      }
      case 'BOOKMARK':
        return undefined;
      case 'DELETED':
        this.logger.info({ nodeAgent: this.options.name }, 'the NodeAgent was deleted; creating it again');
        return { kind: 'relist' };
      case 'ERROR': {
        const code = watchErrorStatusCode(object);
        return code === 410 ? { kind: 'relist' } : { kind: 'failed', err: new NodeAgentWatchError(code) };
      }
    }
  }
}

/** Creates a stopped watch; call `start()`. */
export function createNodeAgentWatch(options: NodeAgentWatchOptions): NodeAgentWatch {
  return new NodeAgentWatchLoop(options);
}
