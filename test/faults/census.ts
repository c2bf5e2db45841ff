/**
 * Counting everything after a fault. Nothing is sampled: every pod of the namespace in the API,
 * every sandbox and every container labelled for it in the runtime, in every state.
 *
 * - Inventory of one pod: exactly one sandbox in any state (a pod never has two, ready or not),
 *   and per spec container exactly the instances expected (states in attempt order), each created
 *   with a restart-count annotation equal to its attempt, the newest being what the API reports
 *   (same container ID, same restartCount). Nothing outside the spec.
 * - Orphans: nothing in the runtime is labelled with a UID the API does not have.
 * - Restart ledger: the runtime's containers at the moment of a fault against the end state, pod
 *   by pod: a container running at the fault still runs with the same ID and restart count; one
 *   created but never started may be started as it is or (only when the agent died) replaced with
 *   the next restart count; a container that did not exist yet starts with restartCount 0. When
 *   the agent died inside StartContainer, containerd fails that start (`StartError`); the dead
 *   instance stays beside the next attempt, as under the kubelet: container GC keeps the newest
 *   exited instance of each container (controllers/gc), and that is the StartError one until a
 *   later instance exits.
 */
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { bareContainerId, describeStates, listPods, runtimeOfNamespace, type RuntimeContainer, type RuntimeView } from './state.js';

/** What a namespace should look like once it has converged. */
export interface Expectation {
  readonly namespace: string;
  /** Names of the pods that should exist and be Running and Ready. */
  readonly present: readonly string[];
  /** UIDs of pods that were deleted: gone from the API and the runtime. */
  readonly deletedUids: readonly string[];
}

/** What one pod must have in the runtime. */
export interface PodInventory {
  /** The state of its one sandbox. */
  readonly sandbox: 'SANDBOX_READY' | 'SANDBOX_NOTREADY';
  /** Per spec container: the states of every instance, in attempt order (after one restart: EXITED, RUNNING). */
  readonly containers: Readonly<Record<string, readonly string[]>>;
}

/** A churn pod once converged: one ready sandbox, its one `main` container running (sleepers never exit). */
export const ONE_RUNNING_MAIN: PodInventory = { sandbox: 'SANDBOX_READY', containers: { main: ['CONTAINER_RUNNING'] } };

const short = (id: string): string => id.slice(0, 12);

function podName(pod: V1Pod): string {
  return pod.metadata?.name ?? '?';
}

function apiStatusOf(pod: V1Pod, name: string): V1ContainerStatus | undefined {
  return [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])].find((s) => s.name === name);
}

function byAttempt(containers: readonly RuntimeContainer[]): RuntimeContainer[] {
  return [...containers].sort((a, b) => a.attempt - b.attempt);
}

function containerProblems(pod: V1Pod, name: string, instances: readonly RuntimeContainer[], want: readonly string[]): string[] {
  const label = `${podName(pod)}/${name}`;
  const ordered = byAttempt(instances);
  const problems: string[] = [];
  const got = ordered.map((c) => c.state);
  if (got.join() !== want.join()) problems.push(`${label}: runtime has ${got.join(' → ') || 'no container'}, want ${want.join(' → ')}`);
  for (const c of ordered) {
    if (c.restartCount !== c.attempt) problems.push(`${label}: container ${short(c.id)} is attempt ${c.attempt} with restartCount annotation ${c.restartCount}`);
  }
  const newest = ordered.at(-1);
  const status = apiStatusOf(pod, name);
  if (newest === undefined) return problems;
  if (status === undefined) return [...problems, `${label}: the API reports no status for it`];
  if (bareContainerId(status.containerID) !== newest.id) problems.push(`${label}: the API reports container ${short(bareContainerId(status.containerID)) || 'none'}, the runtime's newest is ${short(newest.id)}`);
  if (status.restartCount !== newest.restartCount) problems.push(`${label}: the API reports restartCount ${status.restartCount}, the runtime's newest has ${newest.restartCount}`);
  return problems;
}

/** How the pod's runtime objects differ from `want`; also checks the API's container IDs and restart counts against them. */
export function podInventoryProblems(pod: V1Pod, runtime: RuntimeView, want: PodInventory): string[] {
  const uid = pod.metadata?.uid ?? '';
  const problems: string[] = [];
  const sandboxes = runtime.sandboxes.filter((s) => s.uid === uid);
  if (sandboxes.length !== 1 || sandboxes[0]?.state !== want.sandbox) {
    problems.push(`${podName(pod)}: ${sandboxes.length} sandboxes (${describeStates(sandboxes)}), want exactly one ${want.sandbox}`);
  }
  const mine = runtime.containers.filter((c) => c.uid === uid);
  for (const c of mine) {
    if (!(c.name in want.containers)) problems.push(`${podName(pod)}: container ${c.name} ${short(c.id)} (${c.state}) is not expected`);
  }
  for (const [name, states] of Object.entries(want.containers)) {
    problems.push(...containerProblems(pod, name, mine.filter((c) => c.name === name), states));
  }
  return problems;
}

/** Sandboxes and containers labelled with a UID the API does not have (deleted pods' leftovers included). */
export function orphanProblems(pods: readonly V1Pod[], runtime: RuntimeView, deletedUids: readonly string[] = []): string[] {
  const apiUids = new Set(pods.map((p) => p.metadata?.uid ?? ''));
  const deleted = new Set(deletedUids);
  const what = (uid: string): string => (deleted.has(uid) ? `deleted pod ${uid}` : `pod ${uid}, which the API does not have,`);
  return [
    ...runtime.sandboxes.filter((s) => !apiUids.has(s.uid)).map((s) => `${what(s.uid)} still has sandbox ${short(s.id)} (${s.state})`),
    ...runtime.containers.filter((c) => !apiUids.has(c.uid)).map((c) => `${what(c.uid)} still has container ${c.name} ${short(c.id)} (${c.state})`),
  ];
}

/**
 * Every way the namespace differs from `want` (pod name → inventory): a pod missing or unexpected,
 * an orphan, or a pod whose runtime objects or API container statuses are not exactly as expected.
 */
export async function namespaceInventoryProblems(namespace: string, want: Readonly<Record<string, PodInventory>>): Promise<string[]> {
  const [pods, runtime] = await Promise.all([listPods(namespace), runtimeOfNamespace(namespace)]);
  const names = new Set(pods.map(podName));
  return [
    ...Object.keys(want).filter((name) => !names.has(name)).map((name) => `${name} is missing from the API`),
    ...orphanProblems(pods, runtime),
    ...pods.flatMap((pod) => {
      const inventory = want[podName(pod)];
      return inventory === undefined ? [`unexpected pod ${podName(pod)}`] : podInventoryProblems(pod, runtime, inventory);
    }),
  ];
}

/** A probe for `eventually`: resolves once `namespaceInventoryProblems` is empty, throws them otherwise. */
export function inventoryMatches(namespace: string, want: Readonly<Record<string, PodInventory>>): () => Promise<true> {
  return async () => {
    const problems = await namespaceInventoryProblems(namespace, want);
    if (problems.length > 0) throw new Error(problems.join('; '));
    return true;
  };
}

function isReady(pod: V1Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
}

function apiProblems(pods: readonly V1Pod[], expectation: Expectation): string[] {
  const problems: string[] = [];
  const byName = new Map(pods.map((p) => [podName(p), p]));
  for (const name of expectation.present) {
    const pod = byName.get(name);
    if (pod === undefined) problems.push(`${name} is missing from the API`);
    else if (pod.status?.phase !== 'Running' || !isReady(pod)) problems.push(`${name} is ${pod.status?.phase ?? 'without phase'}${isReady(pod) ? '' : ', not Ready'}`);
  }
  const present = new Set(expectation.present);
  for (const pod of pods) {
    if (!present.has(podName(pod))) problems.push(`deleted pod ${podName(pod)} is still in the API (deletionTimestamp ${pod.metadata?.deletionTimestamp?.toString() ?? 'unset'})`);
  }
  return problems;
}

/**
 * The inventory one pod must have after a fault: `inventory`, plus one dead instance before the
 * running one for a container whose start the fault interrupted (see `interruptedStart`).
 */
export function inventoryAfterFault(pod: V1Pod, runtime: RuntimeView, inventory: PodInventory, atFault: RuntimeView): PodInventory {
  const uid = pod.metadata?.uid ?? '';
  const interrupted = (name: string): boolean => runtime.containers.some((c) => c.uid === uid && c.name === name && interruptedStart(c, atFault));
  const containers = Object.fromEntries(Object.entries(inventory.containers).map(([name, states]) => [name, interrupted(name) ? ['CONTAINER_EXITED', ...states] : states]));
  return { ...inventory, containers };
}

/**
 * Every way the namespace differs from the expectation right now (empty: converged). `atFault`:
 * the runtime at the fault, when a start it interrupted may have left a dead instance.
 */
export async function convergenceProblems(expectation: Expectation, atFault?: RuntimeView, inventory: PodInventory = ONE_RUNNING_MAIN): Promise<string[]> {
  const [pods, runtime] = await Promise.all([listPods(expectation.namespace), runtimeOfNamespace(expectation.namespace)]);
  return problemsOf(expectation, { pods, runtime }, atFault, inventory);
}

/** `convergenceProblems` of a state already read (`pods` from the API, `runtime` as it is now). */
export function problemsOf(expectation: Expectation, now: { pods: readonly V1Pod[]; runtime: RuntimeView }, atFault?: RuntimeView, inventory: PodInventory = ONE_RUNNING_MAIN): string[] {
  const { pods, runtime } = now;
  const wantOf = (pod: V1Pod): PodInventory => (atFault === undefined ? inventory : inventoryAfterFault(pod, runtime, inventory, atFault));
  return [
    ...apiProblems(pods, expectation),
    ...orphanProblems(pods, runtime, expectation.deletedUids),
    ...pods.flatMap((pod) => podInventoryProblems(pod, runtime, wantOf(pod))),
  ];
}

/** A probe for `eventually`: resolves when converged, throws the first problems otherwise. */
export function converged(expectation: Expectation, atFault?: RuntimeView): () => Promise<true> {
  return async () => {
    const problems = await convergenceProblems(expectation, atFault);
    if (problems.length > 0) throw new Error(`${problems.length} problems, e.g. ${problems.slice(0, 6).join('; ')}`);
    return true;
  };
}

/** What the ledger found, for the test's printed figures. */
export interface LedgerSummary {
  /** Containers running at the fault, and how many of those still run unchanged. */
  readonly runningAtFault: number;
  readonly keptRunning: number;
  /** Containers created but never started at the fault: started as they were, or replaced. */
  readonly createdAtFault: number;
  readonly createdStarted: number;
  readonly createdReplaced: number;
  /** Of those, how many the runtime failed to start when the agent died (`StartError`, kept dead) and were replaced. */
  readonly createdStartFailed: number;
  /** Containers that did not exist at the fault and started with restartCount 0. */
  readonly newSinceFault: number;
}

export interface Ledger {
  readonly problems: readonly string[];
  readonly summary: LedgerSummary;
}

/**
 * A start the agent's death interrupted: containerd fails a StartContainer whose caller went away
 * and marks the container exited with reason `StartError` (exit code 128), as for any start error.
 * The agent then starts the next attempt, and the dead instance stays (container GC keeps the
 * newest exited instance, as the kubelet's), so the name has EXITED → RUNNING. Only a container that was created and not
 * yet started at the fault (or already marked so by then) may end like this.
 */
export function interruptedStart(c: RuntimeContainer, atFault: RuntimeView): boolean {
  const was = atFault.containers.find((x) => x.id === c.id);
  if (was === undefined || c.state !== 'CONTAINER_EXITED' || c.exitReason !== 'StartError') return false;
  return was.state === 'CONTAINER_CREATED' || (was.state === 'CONTAINER_EXITED' && was.exitReason === 'StartError');
}

/** A container of one pod now, as the ledger compares it with the fault. */
interface NowOfName {
  readonly running: RuntimeContainer | undefined;
  readonly status: V1ContainerStatus | undefined;
  /** The container that existed at the fault, if the runtime still has it. */
  readonly leftover: RuntimeContainer | undefined;
}

function createdVerdict(was: RuntimeContainer, now: NowOfName, atFault: RuntimeView, agentDied: boolean): string {
  const nowId = now.running?.id;
  const nowCount = now.status?.restartCount;
  if (nowId === was.id && nowCount === was.restartCount) return 'created-started';
  const replaced = agentDied && nowId !== undefined && nowId !== was.id && nowCount === was.restartCount + 1;
  if (replaced && now.leftover === undefined) return 'created-replaced';
  // The API reports the dead attempt as the last state, as the kubelet does.
  if (replaced && interruptedStart(now.leftover!, atFault) && now.status?.lastState?.terminated?.reason === 'StartError') return 'created-start-failed';
  const shown = `now ${nowId === undefined ? 'none running' : short(nowId)} with restartCount ${nowCount ?? '?'}`;
  const left = now.leftover === undefined ? '' : `, and it is still there (${now.leftover.state}${now.leftover.exitReason === '' ? '' : ` ${now.leftover.exitReason}`}; API last state ${now.status?.lastState?.terminated?.reason ?? 'none'})`;
  return `container ${short(was.id)} created but not started at the fault (restartCount ${was.restartCount}): ${shown}${left}`;
}

/** One container name of one pod: what it was at the fault, what it is now. */
function verdict(was: RuntimeContainer | undefined, now: NowOfName, atFault: RuntimeView, agentDied: boolean): string {
  const nowId = now.running?.id;
  const nowCount = now.status?.restartCount;
  const shown = `now ${nowId === undefined ? 'none running' : short(nowId)} with restartCount ${nowCount ?? '?'}`;
  if (was === undefined) return nowCount === 0 ? 'new' : `did not exist at the fault, ${shown}`;
  if (was.state === 'CONTAINER_RUNNING') {
    return nowId === was.id && nowCount === was.restartCount ? 'kept' : `running container ${short(was.id)} (restartCount ${was.restartCount}) at the fault was replaced or restarted: ${shown}`;
  }
  if (was.state === 'CONTAINER_CREATED' || (was.state === 'CONTAINER_EXITED' && was.exitReason === 'StartError')) return createdVerdict(was, now, atFault, agentDied);
  return `container ${short(was.id)} was ${was.state} at the fault (a sleeper never exits)`;
}

/**
 * Compares every pod's containers now (`pods` from the API, `runtime` as it is now) with the
 * runtime at the fault (see the file header). `agentDied`: the agent was killed at the fault, so a
 * created container may have been abandoned.
 */
export function ledgerOf(now: { pods: readonly V1Pod[]; runtime: RuntimeView }, atFault: RuntimeView, agentDied: boolean): Ledger {
  const { pods, runtime } = now;
  const problems: string[] = [];
  const counts = new Map<string, number>();
  for (const pod of pods) {
    const uid = pod.metadata?.uid ?? '';
    for (const spec of pod.spec?.containers ?? []) {
      const was = byAttempt(atFault.containers.filter((c) => c.uid === uid && c.name === spec.name)).at(-1);
      const running = runtime.containers.find((c) => c.uid === uid && c.name === spec.name && c.state === 'CONTAINER_RUNNING');
      const leftover = was === undefined ? undefined : runtime.containers.find((c) => c.id === was.id);
      const v = verdict(was, { running, status: apiStatusOf(pod, spec.name), leftover }, atFault, agentDied);
      if (['kept', 'created-started', 'created-replaced', 'created-start-failed', 'new'].includes(v)) counts.set(v, (counts.get(v) ?? 0) + 1);
      else problems.push(`${podName(pod)}/${spec.name}: ${v}`);
    }
  }
  const n = (key: string): number => counts.get(key) ?? 0;
  const apiUids = new Set(pods.map((p) => p.metadata?.uid ?? ''));
  const kept = atFault.containers.filter((c) => apiUids.has(c.uid));
  return {
    problems,
    summary: {
      runningAtFault: kept.filter((c) => c.state === 'CONTAINER_RUNNING').length,
      keptRunning: n('kept'),
      createdAtFault: kept.filter((c) => c.state === 'CONTAINER_CREATED' || c.exitReason === 'StartError').length,
      createdStarted: n('created-started'),
      createdReplaced: n('created-replaced'),
      createdStartFailed: n('created-start-failed'),
      newSinceFault: n('new'),
    },
  };
}

/** `ledgerOf` the namespace as it is now. */
export async function restartLedger(namespace: string, atFault: RuntimeView, agentDied: boolean): Promise<Ledger> {
  const [pods, runtime] = await Promise.all([listPods(namespace), runtimeOfNamespace(namespace)]);
  return ledgerOf({ pods, runtime }, atFault, agentDied);
}

/** The summary as one sentence, for the test's printed figures. */
export function describeLedger(s: LedgerSummary): string {
  return `of the kept pods' containers at the fault: ${s.runningAtFault} running (${s.keptRunning} still running unchanged), ${s.createdAtFault} created-not-started (${s.createdStarted} started as they were, ${s.createdReplaced} replaced with the next restart count, ${s.createdStartFailed} failed by the runtime with StartError when the agent died and replaced with the next restart count); ${s.newSinceFault} containers created after the fault with restartCount 0`;
}

/**
 * The damage a fault can leave that an operator counts, over one namespace: every figure must be
 * zero. Counted from one reading of the API and the runtime (every state).
 */
export interface DamageCounts {
  /** Sandboxes beyond the first of a pod the API has, in any state (a churn pod never needs a second). */
  readonly duplicateSandboxes: number;
  /** Sandboxes labelled with a UID the API does not have, in any state. */
  readonly orphanSandboxes: number;
  /** Containers labelled with a UID the API does not have, in any state. */
  readonly orphanContainers: number;
}

/** Counts `DamageCounts` in one reading (see there). */
export function countDamage(pods: readonly V1Pod[], runtime: RuntimeView): DamageCounts {
  const apiUids = new Set(pods.map((p) => p.metadata?.uid ?? ''));
  const perUid = new Map<string, number>();
  for (const s of runtime.sandboxes) perUid.set(s.uid, (perUid.get(s.uid) ?? 0) + 1);
  let duplicateSandboxes = 0;
  for (const [uid, n] of perUid) if (apiUids.has(uid)) duplicateSandboxes += n - 1;
  return {
    duplicateSandboxes,
    orphanSandboxes: runtime.sandboxes.filter((s) => !apiUids.has(s.uid)).length,
    orphanContainers: runtime.containers.filter((c) => !apiUids.has(c.uid)).length,
  };
}

/** What a `SandboxWitness` saw of one sandbox over every reading. */
interface SandboxSeen {
  readonly uid: string;
  readonly attempt: number;
  everReady: boolean;
  hostedContainer: boolean;
}

/**
 * Every sandbox seen per pod UID over a whole run, across every reading given to `observe`: a
 * second sandbox that was created and removed again between two end-of-round censuses still
 * counts. Only for workloads whose sandboxes never legitimately die (sleepers whose sandbox no
 * fault kills: an agent kill, an API server restart, a containerd kill leave the shims running).
 *
 * One exception is told apart, not hidden: a sandbox the runtime left half-made when it died
 * inside RunPodSandbox (never seen ready, no container ever in it) and a later attempt replaced,
 * as the kubelet replaces a sandbox that is not ready (container GC removes the dead one later).
 * Every other second sandbox of a pod is a duplicate.
 */
export class SandboxWitness {
  private readonly seen = new Map<string, SandboxSeen>();
  private readings = 0;

  observe(runtime: RuntimeView): void {
    this.readings++;
    for (const s of runtime.sandboxes) {
      const seen = this.seen.get(s.id) ?? { uid: s.uid, attempt: s.attempt, everReady: false, hostedContainer: false };
      seen.everReady ||= s.state === 'SANDBOX_READY';
      this.seen.set(s.id, seen);
    }
    for (const c of runtime.containers) {
      const seen = this.seen.get(c.sandboxId);
      if (seen !== undefined) seen.hostedContainer = true;
    }
  }

  /** How many runtime readings were observed. */
  get observations(): number {
    return this.readings;
  }

  /** How many pod UIDs were seen with a sandbox. */
  get pods(): number {
    return new Set([...this.seen.values()].map((s) => s.uid)).size;
  }

  private byUid(): Map<string, [string, SandboxSeen][]> {
    const byUid = new Map<string, [string, SandboxSeen][]>();
    for (const entry of this.seen) byUid.set(entry[1].uid, [...(byUid.get(entry[1].uid) ?? []), entry]);
    return byUid;
  }

  /** Sandboxes abandoned half-made by a dying runtime and replaced by a later attempt (see the class). */
  abandonedAtCreation(): { uid: string; sandboxId: string }[] {
    return [...this.byUid()].flatMap(([uid, sandboxes]) => {
      const newest = Math.max(...sandboxes.map(([, s]) => s.attempt));
      return sandboxes.filter(([, s]) => s.attempt < newest && !s.everReady && !s.hostedContainer).map(([sandboxId]) => ({ uid, sandboxId }));
    });
  }

  /** Pods seen with more than one sandbox, not counting those abandoned at creation, with every sandbox ID seen. */
  duplicates(): { uid: string; sandboxIds: string[] }[] {
    const abandoned = new Set(this.abandonedAtCreation().map((a) => a.sandboxId));
    return [...this.byUid()]
      .filter(([, sandboxes]) => sandboxes.filter(([id]) => !abandoned.has(id)).length > 1)
      .map(([uid, sandboxes]) => ({ uid, sandboxIds: sandboxes.map(([id]) => id) }));
  }

  /** Sandboxes beyond the first, summed over the pods of `duplicates()`. */
  get duplicateCount(): number {
    const abandoned = new Set(this.abandonedAtCreation().map((a) => a.sandboxId));
    return this.duplicates().reduce((sum, d) => sum + d.sandboxIds.filter((id) => !abandoned.has(id)).length - 1, 0);
  }
}
