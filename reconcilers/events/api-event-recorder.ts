/**
 * Events written to the API server as `core/v1` Events, the way `kubectl describe pod` lists them.
 * Repeats of the same event (same pod, type, reason, message, field path) within ten minutes bump
 * the existing event's `count` and `lastTimestamp` instead of creating another, like client-go's
 * event correlator. Writes are serialised on an internal chain: recording never blocks a reconcile,
 * and a failed write is logged, never thrown.
 */
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { PatchType } from '../../kube/client.js';
import type { CoreV1Client } from '../../kube/core-v1.js';
import type { Logger } from 'pino';
import { isForbidden } from '../../util/api-errors.js';
import type { Clock } from '../../util/clock.js';
import type { PodKey } from '../../util/pod-key.js';
import type { EventRecorder, PodEvent } from './event-recorder.js';
import type { NodeEvent, NodeEventSink, NodeRef } from './node-event.js';

/** What an event is about: a pod (with a container's field path, maybe) or the Node. */
interface Involved {
  readonly kind: 'Pod' | 'Node';
  readonly name: string;
  /** The pod's namespace; a Node's events go to `default`, as client-go's recorder puts them. */
  readonly namespace: string;
  readonly uid: string;
}

interface Aggregate {
  readonly podUid: string;
  readonly name: string;
  readonly namespace: string;
  count: number;
  lastSeenMs: number;
}

export interface ApiEventRecorderOptions {
  readonly core: Pick<CoreV1Client, 'createNamespacedEvent' | 'patchNamespacedEvent'>;
  readonly nodeName: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Component shown in the event's source (`kubectl describe`'s "From"). */
  readonly component?: string;
}

const AGGREGATION_WINDOW_MS = 10 * 60 * 1000;
const MAX_AGGREGATES = 4096;

export class ApiEventRecorder implements EventRecorder, NodeEventSink {
  private readonly aggregates = new Map<string, Aggregate>();
  private chain: Promise<void> = Promise.resolve();
  private sequence = 0;

  constructor(private readonly options: ApiEventRecorderOptions) {}

  record(pod: V1Pod, event: PodEvent): void {
    const meta = pod.metadata ?? {};
    this.enqueue({ kind: 'Pod', name: meta.name ?? '', namespace: meta.namespace ?? 'default', uid: meta.uid ?? '' }, event);
  }

  /** An event about the Node (`kubectl describe node`), as the kubelet's node reference has it. */
  recordNode(node: NodeRef, event: NodeEvent): void {
    this.enqueue({ kind: 'Node', name: node.name, namespace: 'default', uid: node.uid }, event);
  }

  private enqueue(involved: Involved, event: PodEvent): void {
    this.chain = this.chain.then(() => this.write(involved, event)).catch((error: unknown) => {
      // Forbidden: e.g. the namespace is terminating; the kubelet drops those events too.
      const level = isForbidden(error) ? 'debug' : 'warn';
      this.options.logger[level]({ err: error, reason: event.reason }, 'failed to write event');
    });
  }

  /** Resolves when every event recorded so far has been written (or failed). */
  async flush(): Promise<void> {
    await this.chain;
  }

  private async write(involved: Involved, event: PodEvent): Promise<void> {
    const nowMs = this.options.clock.now();
    const key = aggregationKey(involved, event);
    const existing = this.aggregates.get(key);
    const now = new Date(nowMs);
    if (existing !== undefined && nowMs - existing.lastSeenMs < AGGREGATION_WINDOW_MS) {
      existing.count++;
      existing.lastSeenMs = nowMs;
      await this.options.core.patchNamespacedEvent(
        { name: existing.name, namespace: existing.namespace, body: { count: existing.count, lastTimestamp: now } },
        PatchType.merge,
      );
      return;
    }
    const body = this.newEvent(involved, event, now);
    const namespace = involved.namespace;
    await this.options.core.createNamespacedEvent({ namespace, body });
    this.remember(key, { podUid: involved.uid, name: body.metadata.name ?? '', namespace, count: 1, lastSeenMs: nowMs });
  }

  private newEvent(involved: Involved, event: PodEvent, now: Date): CoreV1Event {
    const { name, namespace, uid } = involved;
    const component = this.options.component ?? 'nodelet';
    // A Node's reference has no namespace (the kubelet v1.37's events show `apiVersion: v1`, kind, name, UID).
    const object = involved.kind === 'Pod' ? { apiVersion: 'v1', kind: 'Pod', name, namespace, uid } : { apiVersion: 'v1', kind: 'Node', name, uid };
    return {
      metadata: { name: `${name}.${(now.getTime() * 1000 + (this.sequence++ % 1000)).toString(16)}`, namespace },
      involvedObject: { ...object, ...(event.fieldPath === undefined ? {} : { fieldPath: event.fieldPath }) },
      type: event.type,
      reason: event.reason,
      message: event.message,
      source: { component, host: this.options.nodeName },
      reportingComponent: component,
      reportingInstance: this.options.nodeName,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
  }

  /** Drops the aggregates of a pod that is gone (its events are no longer bumped, but kept in the API). */
  podForgotten(key: PodKey): void {
    for (const [aggregateKey, aggregate] of this.aggregates) if (aggregate.podUid === key.uid) this.aggregates.delete(aggregateKey);
  }

  /** Pods' event aggregates held in memory. */
  get aggregateCount(): number {
    return this.aggregates.size;
  }

  private remember(key: string, aggregate: Aggregate): void {
    if (this.aggregates.size >= MAX_AGGREGATES) {
      const oldest = this.aggregates.keys().next();
      if (oldest.done !== true) this.aggregates.delete(oldest.value);
    }
    this.aggregates.set(key, aggregate);
  }
}

function aggregationKey(involved: Involved, event: PodEvent): string {
  return JSON.stringify([involved.uid, event.type, event.reason, event.message, event.fieldPath ?? '']);
}
