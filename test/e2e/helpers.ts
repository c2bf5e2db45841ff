/**
 * Helpers for end-to-end tests against the test cluster (`npm run cluster:up`): run kubectl and
 * crictl as a user would, read API objects, and wait for conditions with a deadline.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { isDeepStrictEqual, promisify } from 'node:util';
import type { CoreV1Event, V1ContainerStatus, V1Pod } from '@kubernetes/client-node';

const run = promisify(execFile);

export const NODE_NAME = process.env.NODE_NAME ?? '';
export const NODE_IP = process.env.NODE_IP ?? '';

/** Fails fast with a clear message when the cluster's environment is missing. */
export function requireCluster(): void {
  if (process.env.KUBECONFIG === undefined || NODE_NAME === '' || process.env.CONTAINER_RUNTIME_ENDPOINT === undefined) {
    throw new Error('the test cluster is not up: run `npm run cluster:up` (it writes .cluster/env)');
  }
}

/** Runs kubectl with the admin kubeconfig; `input` is fed to stdin. Rejects on a non-zero exit. */
export async function kubectl(args: readonly string[], input?: string): Promise<string> {
  const child = run('kubectl', [...args], { maxBuffer: 16 * 1024 * 1024, timeout: 120_000 });
  if (input !== undefined) {
    child.child.stdin?.end(input);
  }
  const { stdout } = await child;
  return stdout;
}

/** Runs crictl against the harness' containerd. */
export async function crictl(args: readonly string[]): Promise<string> {
  const { stdout } = await run('crictl', [...args], { timeout: 60_000 });
  return stdout;
}

/** Sandbox IDs in the runtime labelled with this pod UID (any state). */
export async function sandboxesOf(uid: string): Promise<string[]> {
  const out = await crictl(['pods', '--label', `io.kubernetes.pod.uid=${uid}`, '-q']);
  return out.split('\n').filter((l) => l.trim() !== '');
}

/** Container IDs in the runtime labelled with this pod UID (any state). */
export async function containersOf(uid: string): Promise<string[]> {
  const out = await crictl(['ps', '-a', '--label', `io.kubernetes.pod.uid=${uid}`, '-q']);
  return out.split('\n').filter((l) => l.trim() !== '');
}

/**
 * Polls `probe` every `intervalMs` until it returns a value other than `undefined`; unlike
 * {@link eventually}, a rejection of `probe` fails at once instead of being retried.
 */
export async function pollUntil<T>(what: string, probe: () => Promise<T | undefined>, options: { timeoutMs?: number; intervalMs?: number } = {}): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 90_000);
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${options.timeoutMs ?? 90_000} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 500));
  }
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(3).toString('hex')}`;
}

/** Polls `probe` until it returns a value other than `undefined`, or fails after `timeoutMs`. */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      const cause = last instanceof Error ? `: ${last.message}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${cause}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/**
 * The pod, or undefined when the API says it does not exist (NotFound, through kubectl's
 * `--ignore-not-found`). Any other failure rejects: an unreachable API server is not "pod gone".
 */
export async function getPod(namespace: string, name: string): Promise<V1Pod | undefined> {
  const out = await kubectl(['get', 'pod', '-n', namespace, name, '-o', 'json', '--ignore-not-found']);
  return out.trim() === '' ? undefined : (JSON.parse(out) as V1Pod);
}

/** Mount points of this host's (the agent's) mount namespace at or under `dir`, from /proc/self/mountinfo. */
export async function hostMountsUnder(dir: string): Promise<string[]> {
  const lines = (await readFile('/proc/self/mountinfo', 'utf8')).split('\n');
  return lines.map((l) => l.split(' ')[4] ?? '').filter((p) => p === dir || p.startsWith(`${dir}/`));
}

export async function podEvents(namespace: string, name: string): Promise<CoreV1Event[]> {
  const out = await kubectl(['get', 'events', '-n', namespace, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']);
  return (JSON.parse(out) as { items: CoreV1Event[] }).items;
}

/**
 * Creates a namespace and waits, as the upstream e2e framework does, until the controller-manager
 * has filled it: the `default` ServiceAccount (admission refuses pods without it) and the
 * `kube-root-ca.crt` ConfigMap every pod's service account volume projects. Two controllers make
 * them, in either order; a pod created between the two meets `configmap "kube-root-ca.crt" not
 * found` and a FailedMount warning before its retry succeeds, as on a kubelet.
 */
export async function createNamespace(prefix: string): Promise<string> {
  const namespace = uniqueName(prefix);
  await kubectl(['create', 'namespace', namespace]);
  for (const [kind, name] of [['serviceaccount', 'default'], ['configmap', 'kube-root-ca.crt']] as const) {
    await eventually(`${kind} ${name} in ${namespace}`, async () => {
      await kubectl(['get', kind, name, '-n', namespace]);
      return true;
    });
  }
  return namespace;
}

export async function deleteNamespace(namespace: string): Promise<void> {
  await kubectl(['delete', 'namespace', namespace, '--wait=false', '--ignore-not-found']);
}

/** Applies a manifest with `kubectl apply -f -`. */
export async function apply(manifest: object): Promise<void> {
  await kubectl(['apply', '-f', '-'], JSON.stringify(manifest));
}

/** A busybox pod manifest running `script` in one container named `main`. */
export function busyboxPod(options: { name: string; namespace: string; script: string; nodeName?: string; restartPolicy?: string; image?: string; pullPolicy?: string; env?: object[] }): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: options.name, namespace: options.namespace, labels: { app: options.name } },
    spec: {
      ...(options.nodeName === undefined ? {} : { nodeName: options.nodeName }),
      restartPolicy: options.restartPolicy ?? 'Always',
      terminationGracePeriodSeconds: 5,
      containers: [
        {
          name: 'main',
          image: options.image ?? 'busybox:1.35',
          ...(options.pullPolicy === undefined ? {} : { imagePullPolicy: options.pullPolicy }),
          command: ['sh', '-c', options.script],
          ...(options.env === undefined ? {} : { env: options.env }),
        },
      ],
    },
  };
}

/** Waits for the pod to reach `phase` and returns it. */
export async function waitForPhase(namespace: string, name: string, phase: string, timeoutMs?: number): Promise<V1Pod> {
  return eventually(`pod ${namespace}/${name} to be ${phase}`, async () => {
    const pod = await getPod(namespace, name);
    return pod?.status?.phase === phase ? pod : undefined;
  }, timeoutMs);
}

/** Waits for the `main` container to be waiting with `reason` and returns the pod. */
export async function waitForWaitingReason(namespace: string, name: string, reason: string): Promise<V1Pod> {
  return eventually(`pod ${namespace}/${name} to wait with ${reason}`, async () => {
    const pod = await getPod(namespace, name);
    return pod?.status?.containerStatuses?.[0]?.state?.waiting?.reason === reason ? pod : undefined;
  });
}

// ---- The runtime's view of a pod (crictl, JSON output), to assert next to the API's ----

const UID_LABEL = 'io.kubernetes.pod.uid';

/** A sandbox of the pod as `crictl pods -o json` lists it. */
export interface RuntimeSandbox {
  readonly id: string;
  readonly attempt: number;
  /** `SANDBOX_READY` or `SANDBOX_NOTREADY`. */
  readonly state: string;
}

/** One container instance as `crictl inspect` reports it. Times are ns since the epoch, 0n when unset. */
export interface RuntimeContainer {
  readonly id: string;
  readonly name: string;
  readonly attempt: number;
  /** `CONTAINER_CREATED`, `CONTAINER_RUNNING`, `CONTAINER_EXITED` or `CONTAINER_UNKNOWN`. */
  readonly state: string;
  readonly exitCode: number;
  readonly reason: string;
  readonly createdNs: bigint;
  readonly startedNs: bigint;
  readonly finishedNs: bigint;
}

interface CrictlListItem {
  id: string;
  state: string;
  metadata?: { name?: string; attempt?: number };
}

interface CrictlContainerStatus extends CrictlListItem {
  exitCode?: number;
  reason?: string;
  createdAt?: string | number;
  startedAt?: string | number;
  finishedAt?: string | number;
}

/**
 * A runtime timestamp in ns since the epoch: crictl prints RFC 3339 with up to nine fractional
 * digits (`inspect`) or an integer of ns (`ps`/`pods -o json`). Unset (0, year 1) is 0n.
 */
export function runtimeTimeNs(value: string | number | undefined): bigint {
  if (value === undefined) return 0n;
  if (typeof value === 'number') return value > 0 ? BigInt(Math.round(value)) : 0n;
  if (/^\d+$/.test(value)) return BigInt(value);
  const match = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/.exec(value);
  if (match === null) throw new Error(`not a runtime timestamp: ${value}`);
  const seconds = Date.parse(`${match[1]!}${match[3]!}`);
  if (Number.isNaN(seconds)) throw new Error(`not a runtime timestamp: ${value}`);
  if (seconds <= 0) return 0n;
  return BigInt(seconds) * 1_000_000n + BigInt((match[2] ?? '').padEnd(9, '0'));
}

/** Every sandbox of the pod, in any state, oldest attempt first. */
export async function runtimeSandboxes(uid: string): Promise<RuntimeSandbox[]> {
  const out = await crictl(['pods', '--label', `${UID_LABEL}=${uid}`, '-o', 'json']);
  const items = (JSON.parse(out) as { items: CrictlListItem[] | null }).items ?? [];
  return items.map((s) => ({ id: s.id, attempt: s.metadata?.attempt ?? 0, state: s.state })).sort((a, b) => a.attempt - b.attempt);
}

/** One container instance, inspected. Rejects when the runtime no longer has it. */
export async function inspectContainer(id: string): Promise<RuntimeContainer> {
  const { status } = JSON.parse(await crictl(['inspect', '-o', 'json', id])) as { status: CrictlContainerStatus };
  return {
    id: status.id,
    name: status.metadata?.name ?? '',
    attempt: status.metadata?.attempt ?? 0,
    state: status.state,
    exitCode: status.exitCode ?? 0,
    reason: status.reason ?? '',
    createdNs: runtimeTimeNs(status.createdAt),
    startedNs: runtimeTimeNs(status.startedAt),
    finishedNs: runtimeTimeNs(status.finishedAt),
  };
}

async function listedContainerIds(uid: string): Promise<string[]> {
  const out = await crictl(['ps', '-a', '--label', `${UID_LABEL}=${uid}`, '-o', 'json']);
  return ((JSON.parse(out) as { containers: CrictlListItem[] | null }).containers ?? []).map((c) => c.id);
}

/**
 * A read of one object a runtime listing named; undefined when the read failed and a second listing
 * no longer has it (the agent removed it between the list and the read, as it does when a pod is
 * torn down). Any other failure rejects: an object still listed must be readable.
 */
export async function readUnlessRemoved<T>(read: () => Promise<T>, stillListed: () => Promise<boolean>): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    if (await stillListed()) throw error;
    return undefined;
  }
}

/**
 * Every container instance of the pod, in any state, inspected; sorted by name, then attempt. One
 * removed while it was being read is left out, as the next listing would leave it out.
 */
export async function runtimeContainers(uid: string): Promise<RuntimeContainer[]> {
  const ids = await listedContainerIds(uid);
  const inspected = await Promise.all(ids.map((id) => readUnlessRemoved(() => inspectContainer(id), async () => (await listedContainerIds(uid)).includes(id))));
  return inspected.filter((c): c is RuntimeContainer => c !== undefined).sort((a, b) => a.name.localeCompare(b.name) || a.attempt - b.attempt);
}

/**
 * Everything the runtime holds for a pod, in one comparable picture: each sandbox as
 * `sandbox#<attempt>:<READY|NOTREADY>`, each container instance as `<name>#<attempt>:<state>`, with
 * the exit code of an exited one (`main#1:EXITED(0)`). Compare it whole with `deepEqual`, so an
 * extra or a missing instance fails as surely as a wrong state.
 */
export interface RuntimePicture {
  readonly sandboxes: string[];
  readonly containers: string[];
}

export function describeContainer(c: RuntimeContainer): string {
  const state = c.state.replace(/^CONTAINER_/, '');
  return `${c.name}#${c.attempt}:${state}${state === 'EXITED' ? `(${c.exitCode})` : ''}`;
}

function pictureOf(sandboxes: readonly RuntimeSandbox[], containers: readonly RuntimeContainer[]): RuntimePicture {
  return {
    sandboxes: sandboxes.map((s) => `sandbox#${s.attempt}:${s.state.replace(/^SANDBOX_/, '')}`),
    containers: containers.map(describeContainer),
  };
}

export async function runtimePicture(uid: string): Promise<RuntimePicture> {
  const [sandboxes, containers] = await Promise.all([runtimeSandboxes(uid), runtimeContainers(uid)]);
  return pictureOf(sandboxes, containers);
}

/**
 * Waits until the runtime's picture of the pod equals `expected`, then returns; on timeout fails
 * with the last picture against the expected one. For states the agent reaches a moment after the
 * API shows them (a finished pod's sandbox stops after its status is written).
 */
export async function expectRuntime(uid: string, expected: RuntimePicture, timeoutMs = 30_000, options: { readonly afterContainerGc?: boolean } = {}): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const gc = (p: RuntimePicture): RuntimePicture => (options.afterContainerGc === true ? { ...p, containers: afterContainerGc(p.containers) } : p);
  expected = gc(expected);
  for (;;) {
    const actual = gc(await runtimePicture(uid));
    if (Date.now() > deadline || isDeepStrictEqual(actual, expected)) {
      assert.deepEqual(actual, expected, `the runtime's sandboxes and containers of pod ${uid}`);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** Milliseconds between two runtime timestamps, for printing. */
export function msBetween(fromNs: bigint, toNs: bigint): number {
  return Number(toNs - fromNs) / 1e6;
}

/** The status of container `name` (an init container when `init` is set). */
export function containerStatusOf(pod: V1Pod, name: string, init = false): V1ContainerStatus | undefined {
  return (init ? pod.status?.initContainerStatuses : pod.status?.containerStatuses)?.find((s) => s.name === name);
}

function bareId(id: string | undefined): string {
  return (id ?? '').replace(/^[a-z]+:\/\//, '');
}

/**
 * The pod and its runtime read as one consistent moment for container `name`: the pod's status is
 * the same before and after the runtime is read (same resourceVersion), and it names the newest
 * instance of the container (as its current or last state), running exactly when the runtime's
 * newest instance runs. A status describes the past, so
 * between a restart and its status write the two disagree for a moment; this waits that out and
 * asserts nothing itself, so a wrong count still fails the caller's comparison.
 */
export async function podWithRuntime(
  [namespace, name]: readonly [string, string],
  container: { readonly name: string; readonly init?: boolean },
  accept: (pod: V1Pod) => boolean,
): Promise<{ pod: V1Pod; picture: RuntimePicture }> {
  return eventually(`${namespace}/${name}: status and runtime agreeing on container ${container.name}`, async () => {
    const before = await getPod(namespace, name);
    if (before === undefined || !accept(before)) return undefined;
    const uid = before.metadata?.uid ?? '';
    // One read of the runtime serves both the picture and the newest instance, so they agree.
    const [sandboxes, instances] = await Promise.all([runtimeSandboxes(uid), runtimeContainers(uid)]);
    const picture = pictureOf(sandboxes, instances);
    const after = await getPod(namespace, name);
    if (after?.metadata?.resourceVersion !== before.metadata?.resourceVersion) return undefined;
    const newest = instances.filter((c) => c.name === container.name).at(-1);
    const status = containerStatusOf(before, container.name, container.init);
    const named = [bareId(status?.containerID), bareId(status?.lastState?.terminated?.containerID)];
    const sameState = (status?.state?.running !== undefined) === (newest?.state === 'CONTAINER_RUNNING');
    return newest !== undefined && named.includes(newest.id) && sameState ? { pod: before, picture } : undefined;
  }, 120_000);
}

/**
 * The instances a container that always exits with `exitCode` has in the runtime after the
 * restarts its status counts: attempts 0..restartCount, each exited, but the newest running when
 * the status says so.
 */
export function crashedInstances(name: string, status: V1ContainerStatus | undefined, exitCode: number): string[] {
  const restarts = status?.restartCount ?? 0;
  return Array.from({ length: restarts + 1 }, (_, attempt) =>
    attempt === restarts && status?.state?.running !== undefined ? `${name}#${attempt}:RUNNING` : `${name}#${attempt}:EXITED(${exitCode})`,
  );
}

/**
 * Container instances (`<name>#<attempt>:<state>`) without those container GC may remove at any
 * moment: it runs every minute and, as the kubelet's (MaxPerPodContainer 1), keeps only the newest
 * exited instance of each container. Apply it to both sides of a comparison whose pod has more
 * than one exited instance of a container.
 */
export function afterContainerGc(containers: readonly string[]): string[] {
  const parse = (c: string): { name: string; attempt: number; exited: boolean } => {
    const match = /^(.*)#(\d+):(\w+)/.exec(c);
    return { name: match?.[1] ?? c, attempt: Number(match?.[2] ?? 0), exited: match?.[3] === 'EXITED' };
  };
  const newestExited = new Map<string, number>();
  for (const c of containers.map(parse).filter((p) => p.exited)) newestExited.set(c.name, Math.max(newestExited.get(c.name) ?? -1, c.attempt));
  return containers.filter((c) => {
    const p = parse(c);
    return !p.exited || newestExited.get(p.name) === p.attempt;
  });
}

/** What {@link watchStops} saw of one container while its pod terminated. */
export interface StopObservation {
  readonly name: string;
  /** Host time (ns) at the start of the last listing that still showed it running; 0n if none did. */
  lastRunningNs: bigint;
  /** Its exit as `crictl inspect` read it, unless the agent removed it before it could be read. */
  exit: RuntimeContainer | undefined;
  /** The agent removed it (after killing the pod) before its exit could be read. */
  removed: boolean;
}

function nowNs(): bigint {
  return BigInt(Date.now()) * 1_000_000n;
}

/**
 * Watches the containers `ids` of a terminating pod until each has exited or is gone, listing the
 * pod's containers every `intervalMs` and inspecting the exited ones. The agent removes a pod's
 * containers right after the last one exits, so that last exit may be gone before it can be read;
 * the listings still show until when it ran.
 */
export async function watchStops(uid: string, ids: readonly string[], timeoutMs = 60_000): Promise<Map<string, StopObservation>> {
  const seen = new Map<string, StopObservation>();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const listedAt = nowNs();
    const out = await crictl(['ps', '-a', '--label', `${UID_LABEL}=${uid}`, '-o', 'json']);
    const listed = new Map(((JSON.parse(out) as { containers: CrictlListItem[] | null }).containers ?? []).map((c) => [c.id, c]));
    for (const id of ids) {
      const entry = listed.get(id);
      const name = entry?.metadata?.name ?? seen.get(id)?.name ?? id;
      const o = seen.get(id) ?? { name, lastRunningNs: 0n, exit: undefined, removed: false };
      seen.set(id, o);
      if (entry === undefined) o.removed = o.exit === undefined;
      else if (entry.state === 'CONTAINER_RUNNING') o.lastRunningNs = listedAt;
      else if (o.exit === undefined) {
        // Losing the race with its removal leaves `exit` unset; the next listing marks it removed.
        const inspected = await inspectContainer(id).catch(() => undefined);
        if (inspected?.state === 'CONTAINER_EXITED') o.exit = inspected;
      }
    }
    const settled = [...seen.values()].filter((o) => o.exit !== undefined || o.removed).length;
    if (settled === ids.length) return new Map([...seen.values()].map((o) => [o.name, o]));
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms watching containers stop: ${JSON.stringify([...seen.values()], (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Milliseconds by which `later` stopped after `earlier` had exited: from both exit times, or, when
 * `later` was removed before its exit could be read, a lower bound from the last listing that still
 * showed it running (negative or undefined: no evidence that it stopped later).
 */
export function stoppedAfterMs(earlier: StopObservation, later: StopObservation): { ms: number; bound: boolean } | undefined {
  if (earlier.exit === undefined) return undefined;
  if (later.exit !== undefined) return { ms: msBetween(earlier.exit.finishedNs, later.exit.finishedNs), bound: false };
  return later.lastRunningNs > 0n ? { ms: msBetween(earlier.exit.finishedNs, later.lastRunningNs), bound: true } : undefined;
}

/** What a kubectl run printed and how it ended. */
export interface KubectlOutcome {
  readonly stdout: string;
  readonly stderr: string;
  readonly code: number | null;
}

/**
 * Runs kubectl to its end with `input` on stdin (none: stdin closed at once). Resolves with the
 * exit code as part of the outcome; rejects only when kubectl cannot start or outlives `timeoutMs`.
 */
export function kubectlOutcome(args: readonly string[], input?: string, timeoutMs = 60_000): Promise<KubectlOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn('kubectl', [...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`kubectl ${args.join(' ')} did not end within ${timeoutMs} ms; stdout ${JSON.stringify(stdout)} stderr ${JSON.stringify(stderr)}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ stdout, stderr, code });
    });
    if (input === undefined) child.stdin.end();
    else child.stdin.end(input);
  });
}
