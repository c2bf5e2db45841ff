/**
 * Wakes the PLEG when the runtime says a container changed (CRI `GetContainerEvents`), so a
 * container's exit reaches the API in milliseconds instead of at the next one-second relist. The
 * relist stays the source of truth and the safety net: an event only asks for a relist now (the
 * PLEG's diff, its echo filter and its pod events are unchanged), so a lost or duplicated event
 * costs at most a relist. Only stops and deletions wake it: a container is created and started
 * by the reconciler itself, which reports what it did (a relist then finds only its echo), and
 * four relists per new pod slowed a burst of creates on this 2-core machine. Events of other
 * nodes' sandboxes (`nodelet.dev/node`) are ignored.
 *
 * This is the kubelet v1.37's design (`pkg/kubelet/pleg/evented.go`; the `EventedPLEG` gate, still
 * alpha and off, now rests on `PLEGOnDemandRelist`, GA and locked on in 1.37): its event watcher
 * only requests a relist when a container stops, and the generic PLEG keeps relisting every second
 * (`genericPlegRelistPeriod`). The earlier Evented PLEG, which stretched the relist period to 300 s
 * while events flowed and fed the pod cache from events, is gone; the period here does not grow
 * either.
 *
 * A runtime without the stream (containerd 1.6: UNIMPLEMENTED) is noted once and left alone; a
 * stream that breaks (runtime restarted) is opened again with a capped backoff, and the relist
 * that follows its reopening catches whatever happened in between. The kubelet gives the fast path
 * up after five broken streams (`eventedPlegMaxStreamRetries`); nodelet keeps reopening, so a
 * node whose containerd was restarted more than five times still sees exits at once.
 */
import type { Logger } from 'pino';
import { isCriCancelled, isCriUnimplemented } from '../../cri/errors.js';
import type { ContainerEvent, ContainerEventStream } from '../../cri/container-events.js';
import { LABEL_NODE } from '../../reconcilers/model/runtime-labels.js';
import { backoffDelay, type BackoffPolicy } from '../../util/backoff.js';
import type { Clock } from '../../util/clock.js';

/** Reopening a broken stream: 0.5 s, doubling to 30 s; reset by the first event of a new stream. */
export const EVENT_STREAM_BACKOFF: BackoffPolicy = { initialMs: 500, maxMs: 30_000 };

export interface ContainerEventWatcherOptions {
  readonly stream: ContainerEventStream;
  /** The PLEG's relist-as-soon-as-possible (coalesced with the periodic relist). */
  readonly relistNow: () => Promise<boolean>;
  readonly nodeName: string;
  readonly clock: Clock;
  readonly logger: Logger;
}

/** Whether an event may concern one of this node's pods (a sandbox labelled for another node does not). */
export function concernsNode(event: ContainerEvent, nodeName: string): boolean {
  const owner = event.sandboxLabels[LABEL_NODE];
  return owner === undefined || owner === nodeName;
}

/** Whether the event is news the relist should fetch now: a container stopped or was removed. */
export function wakesRelist(event: ContainerEvent, nodeName: string): boolean {
  return (event.type === 'CONTAINER_STOPPED_EVENT' || event.type === 'CONTAINER_DELETED_EVENT') && concernsNode(event, nodeName);
}

export class ContainerEventWatcher {
  private readonly abort = new AbortController();
  private running: Promise<void> | undefined;
  private failures = 0;
  /** Events received since start (for the agent's self-report and tests). */
  received = 0;
  /** False once the runtime said it has no event stream. */
  supported = true;

  constructor(private readonly options: ContainerEventWatcherOptions) {}

  start(): void {
    this.running ??= this.loop();
  }

  /** Stops watching; resolves once the stream is closed. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.running;
    this.options.stream.close();
  }

  private async loop(): Promise<void> {
    const { logger } = this.options;
    while (!this.abort.signal.aborted) {
      try {
        await this.options.stream.watch((event) => { this.onEvent(event); }, this.abort.signal);
      } catch (error) {
        if (isCriCancelled(error) && this.stopping()) return;
        if (isCriUnimplemented(error)) {
          this.supported = false;
          logger.info('the runtime has no container event stream (GetContainerEvents): container changes are seen by the relist only');
          return;
        }
        this.failures++;
        const delayMs = backoffDelay(EVENT_STREAM_BACKOFF, this.failures);
        logger.warn({ err: error, retryInMs: delayMs }, 'container event stream broke; reopening it');
        await this.sleep(delayMs);
      }
    }
  }

  /** Whether stop() was called (a method: the loop's condition must be read afresh after an await). */
  private stopping(): boolean {
    return this.abort.signal.aborted;
  }

  private onEvent(event: ContainerEvent): void {
    this.failures = 0;
    this.received++;
    if (!wakesRelist(event, this.options.nodeName)) return;
    // relistNow never rejects (its failures are logged by the PLEG).
    void this.options.relistNow();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = this.options.clock.setTimeout(() => {
        this.abort.signal.removeEventListener('abort', wake);
        resolve();
      }, ms);
      const wake = (): void => {
        this.options.clock.clearTimeout(timer);
        resolve();
      };
      this.abort.signal.addEventListener('abort', wake, { once: true });
    });
  }
}
