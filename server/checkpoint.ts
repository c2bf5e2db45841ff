/**
 * `POST /checkpoint/{namespace}/{pod}/{container}`: a running container's checkpoint, as the
 * kubelet's `checkpoint` handler and `CheckpointContainer` (server.go, kubelet.go, v1.37): the pod
 * and the container must be in the pod's spec (404 otherwise), `?timeout=` (the last value, whole
 * seconds) bounds the runtime's work, the runtime (CRI CheckpointContainer, CRIU) writes
 * `<root>/checkpoints/checkpoint-<pod>_<namespace>-<container>-<RFC 3339 time>.tar`, and the answer
 * is `{"items":["<that path>"]}`; a failure of the runtime is a 500 with the kubelet's wording.
 * Who may ask is the node authorizer's `nodes/checkpoint` (authz.ts).
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { isCriError } from '../cri/errors.js';
import type { Container, ContainerCheckpointer, ContainerFilter } from '../cri/types.js';
import { LABEL_CONTAINER_NAME, LABEL_POD_UID } from '../reconcilers/model/runtime-labels.js';
import type { Clock } from '../util/clock.js';
import { sendJson, sendText, type Route, type RouteRequest } from './routes.js';
import { inSpec } from './container-logs.js';

/** What the checkpoint route reads and calls. */
export interface CheckpointDeps {
  /** The pods this node runs (the desired-pod store). */
  readonly pods: { list(): V1Pod[] };
  readonly runtime: ContainerCheckpointer & { listContainers(filter?: ContainerFilter): Promise<Container[]> };
  /** nodelet's root directory: archives go to its `checkpoints` directory, as the kubelet's. */
  readonly rootDir: string;
  readonly clock: Clock;
}

/** The kubelet's checkpoints directory under its root (`getCheckpointsDir`), private to root. */
export function checkpointsDir(rootDir: string): string {
  return path.join(rootDir, 'checkpoints');
}

/** Go's `time.RFC3339` of a UTC instant: whole seconds, `Z`. */
function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The archive's path, as the kubelet names it (`checkpoint-<name>_<namespace>-<container>-<time>.tar`). */
export function checkpointLocation(rootDir: string, pod: { name: string; namespace: string }, container: string, nowMs: number): string {
  return path.join(checkpointsDir(rootDir), `checkpoint-${pod.name}_${pod.namespace}-${container}-${rfc3339(nowMs)}.tar`);
}

/** The `timeout` query's last value in seconds; 0 when absent; undefined when it is not an integer. */
export function checkpointTimeout(query: URLSearchParams): number | undefined {
  const values = query.getAll('timeout');
  const last = values.at(-1);
  if (last === undefined) return 0;
  return /^[+-]?\d+$/.test(last) ? Number(last) : undefined;
}

/** What the route answers: a refusal or failure in the kubelet's words, or the archive's path. */
type CheckpointAnswer = { readonly status: 404 | 500; readonly text: string } | { readonly status: 200; readonly location: string };

async function checkpoint(request: RouteRequest, deps: CheckpointDeps): Promise<CheckpointAnswer> {
  const [namespace = '', podName = '', container = ''] = request.params;
  const pod = deps.pods.list().find((p) => p.metadata?.namespace === namespace && p.metadata.name === podName);
  if (pod === undefined) return { status: 404, text: 'pod does not exist' };
  if (!inSpec(pod, container)) return { status: 404, text: `container ${container} does not exist` };
  const timeoutSeconds = checkpointTimeout(request.query);
  // The kubelet's status for an unparseable timeout, odd as it is.
  if (timeoutSeconds === undefined) return { status: 404, text: 'cannot parse value of timeout parameter' };
  const failed = (cause: string): CheckpointAnswer => ({ status: 500, text: `checkpointing of ${namespace}/${podName}/${container} failed (${cause})` });
  const running = await deps.runtime.listContainers({ state: 'CONTAINER_RUNNING', labelSelector: { [LABEL_POD_UID]: pod.metadata?.uid ?? '', [LABEL_CONTAINER_NAME]: container } });
  const target = running[0];
  if (target === undefined) return failed(`container ${container} not found`);
  const location = checkpointLocation(deps.rootDir, { name: podName, namespace }, container, deps.clock.now());
  await mkdir(checkpointsDir(deps.rootDir), { recursive: true, mode: 0o700 });
  try {
    await deps.runtime.checkpointContainer({ containerId: target.id, location, timeoutSeconds });
  } catch (error) {
    // The runtime's failure quoted as the kubelet's gRPC client words it.
    return failed(isCriError(error) ? error.goStatusText : error instanceof Error ? error.message : String(error));
  }
  return { status: 200, location };
}

async function serveCheckpoint(request: RouteRequest, deps: CheckpointDeps): Promise<void> {
  const answer = await checkpoint(request, deps);
  if (answer.status === 200) sendJson(request.res, 200, { items: [answer.location] });
  else sendText(request.res, answer.status, answer.text);
}

/** The checkpoint route, for `handlers.ts`. */
export function checkpointRoutes(deps: CheckpointDeps): Route[] {
  return [{ method: 'POST', pattern: '/checkpoint/{}/{}/{}', handler: (request) => serveCheckpoint(request, deps) }];
}
