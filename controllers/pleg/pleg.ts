/**
 * PLEG, the pod lifecycle event generator (kubelet pkg/kubelet/pleg/generic.go): containerd 1.6
 * has no `GetContainerEvents`, so the runtime is relisted every second and compared with the
 * previous listing. Pods whose sandboxes or containers changed (appeared, changed state, vanished)
 * are emitted as pod events; the reconcile then looks at the pod as a whole.
 *
 * - The first relist reports every pod the runtime has of this node: after an agent restart, that
 *   is how orphans (pods deleted while the agent was down) reach the reconciler.
 * - A failed relist keeps the previous snapshot, so the changes are reported by the next one.
 * - Relists never overlap: the periodic ones and those asked for with `relistNow()` share one loop.
 * - `healthy()` is false when no relist has succeeded for `unhealthyAfterMs` (3 min, as the
 *   kubelet): the node then reports NotReady.
 * - A change to exactly the state the pod's last reconcile reported (`sightings`) is that
 *   reconcile's own work, already in the pod's status: it is not handed on
 *   (`reconcilers/model/runtime-sightings.ts`; what it saves: "Agent CPU and memory" in docs/benchmarks.md).
 * - A change of a pod whose reconcile runs now (`runInFlight`) is held back, not handed on: the
 *   pod's record keeps its previous state, so the first relist after the run compares again. A
 *   change made by the run itself then matches what the run reported and is dropped; any other
 *   change is handed on then. Handed on during the run, the run's own intermediate states (a
 *   sandbox started, a container stopped) each queued one more run, which found nothing to do.
 */
import type { Logger } from 'pino';
import type { Container, PodSandbox, RuntimeService } from '../../cri/types.js';
import { LABEL_POD_NAME, LABEL_POD_NAMESPACE, LABEL_POD_UID, nodeSelector } from '../../reconcilers/model/runtime-labels.js';
import { runtimeFingerprint, runtimePartEntry, type RuntimeSightingsReader } from '../../reconcilers/model/runtime-sightings.js';
import type { Clock } from '../../util/clock.js';
import { createPeriodicLoop, type PeriodicLoop } from '../../util/periodic-loop.js';
import type { PodKey } from '../../util/pod-key.js';
import type { PodEventSink, RuntimeChange } from '../../reconcilers/model/pod-event.js';

/** One pod as the runtime listing shows it: identity plus a fingerprint of its parts' states. */
export interface PodRecord {
  readonly pod: PodKey;
  /** Sorted `kind/id=state` entries (`runtimeFingerprint`); equal fingerprints mean nothing changed. */
  readonly fingerprint: string;
}

/** A pod whose record changed between two relists: how, and its fingerprint now (empty when it vanished). */
export interface PodChange {
  readonly pod: PodKey;
  readonly change: RuntimeChange;
  readonly fingerprint: string;
}

export type Snapshot = ReadonlyMap<string, PodRecord>;

/** What the runtime showed at a relist: the kubelet's running pods and containers by state. */
export interface RuntimeCounts {
  /** Pods with a ready sandbox. */
  readonly runningPods: number;
  /** Containers by the kubelet's state name: `created`, `running`, `exited`, `unknown` (every state present, 0 when none). */
  readonly containersByState: Readonly<Record<ContainerStateName, number>>;
}

export type ContainerStateName = 'created' | 'running' | 'exited' | 'unknown';

/** One relist, as the kubelet's PLEG metrics see it. */
export interface PlegRelist {
  /** How long the relist took, failed or not. */
  readonly durationSeconds: number;
  /** Seconds since the start of the previous successful relist; absent before the first success. */
  readonly intervalSeconds?: number;
  /** Present when the relist succeeded. */
  readonly counts?: RuntimeCounts;
  /** When the relist began, in milliseconds since the epoch (the kubelet's relist time: `kubelet_pleg_last_seen_seconds` after a success). */
  readonly startedAtMs: number;
}

/** Receives every relist (`kubelet_pleg_relist_*`, `kubelet_running_*`); must not throw. */
export interface PlegMetrics {
  relisted(relist: PlegRelist): void;
}

const STATE_NAMES: Readonly<Record<Container['state'], ContainerStateName>> = {
  CONTAINER_CREATED: 'created',
  CONTAINER_RUNNING: 'running',
  CONTAINER_EXITED: 'exited',
  CONTAINER_UNKNOWN: 'unknown',
};

/**
 * The kubelet's running pods (pods with a ready sandbox, each once however many it has) and
 * containers by state, from one listing. Pure.
 */
export function runtimeCounts(sandboxes: readonly Pick<PodSandbox, 'state' | 'labels'>[], containers: readonly Pick<Container, 'state'>[]): RuntimeCounts {
  const readyPods = new Set(sandboxes.filter((s) => s.state === 'SANDBOX_READY').map((s) => s.labels[LABEL_POD_UID] ?? ''));
  const containersByState: Record<ContainerStateName, number> = { created: 0, running: 0, exited: 0, unknown: 0 };
  for (const c of containers) containersByState[STATE_NAMES[c.state]] += 1;
  return { runningPods: readyPods.size, containersByState };
}

export interface PlegOptions {
  readonly runtime: RuntimeService;
  readonly nodeName: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Where each change is told (as a `runtime-changed` pod event). */
  readonly podEvents: PodEventSink;
  /**
   * What the pods' last reconciles reported: a change to exactly that state is their own work,
   * already in the status, and is not emitted as pod events (`reconcilers/model/runtime-sightings.ts`).
   * Absent: every change is handed on.
   */
  readonly sightings?: RuntimeSightingsReader;
  /** Whether a reconcile of the pod runs now: its changes wait for the first relist after it. Absent: none is held back. */
  readonly runInFlight?: (uid: string) => boolean;
  readonly periodMs?: number;
  readonly unhealthyAfterMs?: number;
  readonly metrics?: PlegMetrics;
}

interface Part {
  readonly kind: 'sandbox' | 'container';
  readonly id: string;
  readonly state: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** Groups a runtime listing into per-pod records. Pure. */
export function buildSnapshot(parts: readonly Part[]): Snapshot {
  const entries = new Map<string, { pod: PodKey; items: string[] }>();
  for (const part of parts) {
    const uid = part.labels[LABEL_POD_UID];
    if (uid === undefined) continue;
    const entry = entries.get(uid) ?? {
      pod: { uid, name: part.labels[LABEL_POD_NAME] ?? '', namespace: part.labels[LABEL_POD_NAMESPACE] ?? '' },
      items: [],
    };
    entry.items.push(runtimePartEntry(part.kind, part.id, part.state));
    entries.set(uid, entry);
  }
  return new Map([...entries].map(([uid, e]) => [uid, { pod: e.pod, fingerprint: runtimeFingerprint(e.items) }]));
}

/** The per-pod records of one runtime listing (sandboxes and containers of this node). Pure. */
export function snapshotOfListing(sandboxes: readonly Pick<PodSandbox, 'id' | 'state' | 'labels'>[], containers: readonly Pick<Container, 'id' | 'state' | 'labels'>[]): Snapshot {
  return buildSnapshot([
    ...sandboxes.map((s) => ({ kind: 'sandbox' as const, id: s.id, state: s.state, labels: s.labels })),
    ...containers.map((c) => ({ kind: 'container' as const, id: c.id, state: c.state, labels: c.labels })),
  ]);
}

/** The pods whose records differ between two snapshots, with why. Pure. */
export function diffSnapshots(previous: Snapshot, current: Snapshot): PodChange[] {
  const changed: PodChange[] = [];
  for (const [uid, record] of current) {
    const old = previous.get(uid);
    if (old === undefined) changed.push({ pod: record.pod, change: 'appeared', fingerprint: record.fingerprint });
    else if (old.fingerprint !== record.fingerprint) changed.push({ pod: record.pod, change: 'changed', fingerprint: record.fingerprint });
  }
  for (const [uid, record] of previous) {
    if (!current.has(uid)) changed.push({ pod: record.pod, change: 'vanished', fingerprint: '' });
  }
  return changed;
}

/**
 * Splits one relist's changes into those handed on now and those held back (`held(uid)`): the
 * snapshot to keep has the previous record of every held pod (none when it had none), so the next
 * relist finds the same change again. Pure.
 */
export function holdBackChanges(previous: Snapshot, current: Snapshot, changes: readonly PodChange[], held: (uid: string) => boolean): { readonly snapshot: Snapshot; readonly handOn: PodChange[] } {
  const heldChanges = changes.filter((c) => held(c.pod.uid));
  if (heldChanges.length === 0) return { snapshot: current, handOn: [...changes] };
  const snapshot = new Map(current);
  for (const { pod } of heldChanges) {
    const before = previous.get(pod.uid);
    if (before === undefined) snapshot.delete(pod.uid);
    else snapshot.set(pod.uid, before);
  }
  return { snapshot, handOn: changes.filter((c) => !held(c.pod.uid)) };
}

export class Pleg {
  private snapshot: Snapshot = new Map();
  private lastSuccessMs: number;
  /** When the last successful relist began (the kubelet's relist time, from which intervals are measured). */
  private lastRelistStartMs: number | undefined;
  private readonly loop: PeriodicLoop;

  constructor(private readonly options: PlegOptions) {
    this.lastSuccessMs = options.clock.now();
    // A failed relist is retried at the next tick: the period is already short.
    this.loop = createPeriodicLoop({
      name: 'pleg-relist',
      periodMs: options.periodMs ?? 1000,
      clock: options.clock,
      logger: options.logger,
      run: () => this.relist(),
    });
  }

  /** Relists now and then every period. */
  start(): void {
    this.loop.start();
  }

  /** Stops relisting; resolves once a relist in flight has ended. */
  stop(): Promise<void> {
    return this.loop.stop();
  }

  /**
   * Relists as soon as possible without overlapping a relist in flight (e.g. after the queue lost
   * its jobs). Resolves true when the relist succeeded; failures are logged, never thrown.
   */
  relistNow(): Promise<boolean> {
    return this.loop.runNow();
  }

  /** True while relists succeed (the last within `unhealthyAfterMs`). */
  healthy(): boolean {
    return this.options.clock.now() - this.lastSuccessMs < (this.options.unhealthyAfterMs ?? 3 * 60_000);
  }

  /** Milliseconds since the epoch of the last successful relist. */
  lastRelistMs(): number {
    return this.lastSuccessMs;
  }

  /**
   * Lists the runtime once and reports the pods that changed; rejects when the runtime does not
   * answer. Not serialized with the loop: a running agent asks for a relist with `relistNow()`.
   */
  async relist(): Promise<void> {
    const { clock, metrics } = this.options;
    const startedMs = clock.now();
    const interval = this.lastRelistStartMs === undefined ? {} : { intervalSeconds: (startedMs - this.lastRelistStartMs) / 1000 };
    let counts: RuntimeCounts | undefined;
    try {
      counts = await this.listAndDiff();
      this.lastRelistStartMs = startedMs;
    } finally {
      metrics?.relisted({ durationSeconds: (clock.now() - startedMs) / 1000, startedAtMs: startedMs, ...interval, ...(counts === undefined ? {} : { counts }) });
    }
  }

  private async listAndDiff(): Promise<RuntimeCounts> {
    const { runtime, nodeName } = this.options;
    const labelSelector = nodeSelector(nodeName);
    const [sandboxes, containers] = await Promise.all([runtime.listPodSandbox({ labelSelector }), runtime.listContainers({ labelSelector })]);
    const current = snapshotOfListing(sandboxes, containers);
    const changes = diffSnapshots(this.snapshot, current);
    const runInFlight = this.options.runInFlight ?? (() => false);
    const { snapshot, handOn } = holdBackChanges(this.snapshot, current, changes, runInFlight);
    this.snapshot = snapshot;
    this.lastSuccessMs = this.options.clock.now();
    this.handOn(handOn);
    return runtimeCounts(sandboxes, containers);
  }

  /** Hands every change on but those the pods' last reconciles already reported. */
  private handOn(changes: readonly PodChange[]): void {
    const { sightings, podEvents, logger } = this.options;
    for (const change of changes) {
      if (sightings?.alreadyReported(change.pod.uid, change.fingerprint) === true) {
        logger.debug({ podUID: change.pod.uid, change: change.change }, 'runtime change already reported by the pod\'s last reconcile');
        continue;
      }
      podEvents.emit({ kind: 'runtime-changed', key: change.pod, change: change.change });
    }
  }
}
