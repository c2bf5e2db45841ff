/**
 * Helpers for end-to-end tests against the test cluster (`npm run cluster:up`): run kubectl and
 * crictl as a user would, read API objects, and wait for conditions with a deadline.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';

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

export async function getPod(namespace: string, name: string): Promise<V1Pod | undefined> {
  try {
    return JSON.parse(await kubectl(['get', 'pod', '-n', namespace, name, '-o', 'json'])) as V1Pod;
  } catch {
    return undefined;
  }
}

export async function podEvents(namespace: string, name: string): Promise<CoreV1Event[]> {
  const out = await kubectl(['get', 'events', '-n', namespace, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']);
  return (JSON.parse(out) as { items: CoreV1Event[] }).items;
}

/** Creates a namespace and waits for its `default` service account (pods need it to be admitted). */
export async function createNamespace(prefix: string): Promise<string> {
  const namespace = uniqueName(prefix);
  await kubectl(['create', 'namespace', namespace]);
  await eventually(`service account default in ${namespace}`, async () => {
    await kubectl(['get', 'serviceaccount', 'default', '-n', namespace]);
    return true;
  });
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
