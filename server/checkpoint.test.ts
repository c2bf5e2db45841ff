/** The checkpoint route's answers, as the kubelet's: refusals, the archive's name, the runtime's failure. */
import assert from 'node:assert/strict';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { CriError } from '../cri/errors.js';
import type { Container, ContainerFilter } from '../cri/types.js';
import { createFakeClock } from '../test/doubles/fake-clock.js';
import { checkpointLocation, checkpointRoutes, checkpointTimeout } from './checkpoint.js';

const POD: V1Pod = { metadata: { name: 'web', namespace: 'team', uid: 'u1' }, spec: { containers: [{ name: 'app', image: 'x' }], initContainers: [{ name: 'setup', image: 'x' }] } };

/** A runtime with one running `app` container of u1; checkpoints are recorded, or fail with `failWith`. */
class CheckpointingRuntime {
  readonly checkpoints: { containerId: string; location: string; timeoutSeconds?: number }[] = [];
  failWith: Error | undefined;

  listContainers(filter?: ContainerFilter): Promise<Container[]> {
    const app: Container = { id: 'c-app', podSandboxId: 's', metadata: { name: 'app', attempt: 0 }, image: { image: 'x' }, imageRef: 'x', state: 'CONTAINER_RUNNING', createdAt: 1n, labels: { 'io.kubernetes.pod.uid': 'u1', 'io.kubernetes.container.name': 'app' }, annotations: {} };
    const wanted = filter?.labelSelector ?? {};
    return Promise.resolve([app].filter((c) => Object.entries(wanted).every(([k, v]) => c.labels[k] === v) && (filter?.state === undefined || c.state === filter.state)));
  }

  checkpointContainer(request: { containerId: string; location: string; timeoutSeconds?: number }): Promise<void> {
    if (this.failWith !== undefined) return Promise.reject(this.failWith);
    this.checkpoints.push(request);
    return Promise.resolve();
  }
}

/** Runs the route and returns what it answered. */
async function post(deps: Parameters<typeof checkpointRoutes>[0], params: string[], query = ''): Promise<{ status: number; body: string }> {
  let status = 0;
  let body = '';
  const res = {
    headersSent: false,
    writeHead(code: number) { status = code; return this; },
    end(text?: string) { body = text ?? ''; },
  } as unknown as ServerResponse;
  const [route] = checkpointRoutes(deps);
  await route!.handler({ req: {} as IncomingMessage, res, params, query: new URLSearchParams(query) });
  return { status, body };
}

describe('POST /checkpoint/{namespace}/{pod}/{container}', () => {
  let rootDir = '';
  before(async () => {
    rootDir = await mkdtemp(path.join(os.tmpdir(), 'nodelet-checkpoint-'));
  });
  after(async () => {
    await rm(rootDir, { recursive: true, force: true });
  });

  const deps = (runtime: CheckpointingRuntime): Parameters<typeof checkpointRoutes>[0] => ({ pods: { list: () => [POD] }, runtime, rootDir, clock: createFakeClock(Date.parse('2026-12-06T23:40:05.123Z')) });

  it('checkpoints the running container into <root>/checkpoints with the kubelet\'s name, and answers its path', async () => {
    const runtime = new CheckpointingRuntime();
    const answer = await post(deps(runtime), ['team', 'web', 'app'], 'timeout=5&timeout=30');
    const location = path.join(rootDir, 'checkpoints', 'checkpoint-web_team-app-2026-12-06T23:40:05Z.tar');
    assert.deepEqual(answer, { status: 200, body: JSON.stringify({ items: [location] }) });
    assert.deepEqual(runtime.checkpoints, [{ containerId: 'c-app', location, timeoutSeconds: 30 }], 'the last timeout given');
    assert.equal((await stat(path.join(rootDir, 'checkpoints'))).mode & 0o777, 0o700);
  });

  it('refuses an unknown pod, a container not in its spec and a timeout that is no integer, as the kubelet (404)', async () => {
    const runtime = new CheckpointingRuntime();
    assert.deepEqual(await post(deps(runtime), ['team', 'other', 'app']), { status: 404, body: 'pod does not exist' });
    assert.deepEqual(await post(deps(runtime), ['team', 'web', 'nope']), { status: 404, body: 'container nope does not exist' });
    assert.deepEqual(await post(deps(runtime), ['team', 'web', 'app'], 'timeout=1s'), { status: 404, body: 'cannot parse value of timeout parameter' });
    assert.equal(runtime.checkpoints.length, 0);
  });

  it('answers 500 with the kubelet\'s wording when nothing runs or the runtime fails', async () => {
    const runtime = new CheckpointingRuntime();
    assert.deepEqual(await post(deps(runtime), ['team', 'web', 'setup']), { status: 500, body: 'checkpointing of team/web/setup failed (container setup not found)' });
    runtime.failWith = new CriError({ method: 'CheckpointContainer', code: GrpcStatus.UNKNOWN, message: 'checkpointing container "c-app" failed: criu failed' });
    const body = 'checkpointing of team/web/app failed (rpc error: code = Unknown desc = checkpointing container "c-app" failed: criu failed)';
    assert.deepEqual(await post(deps(runtime), ['team', 'web', 'app']), { status: 500, body }, 'the runtime\'s failure in the kubelet\'s gRPC words');
    runtime.failWith = new CriError({ method: 'CheckpointContainer', code: GrpcStatus.DEADLINE_EXCEEDED, message: 'deadline' });
    assert.match((await post(deps(runtime), ['team', 'web', 'app'])).body, /\(rpc error: code = DeadlineExceeded desc = deadline\)$/);
  });

  it('reads the timeout as the kubelet: the last value, 0 when absent', () => {
    assert.equal(checkpointTimeout(new URLSearchParams('')), 0);
    assert.equal(checkpointTimeout(new URLSearchParams('timeout=1&timeout=7')), 7);
    assert.equal(checkpointTimeout(new URLSearchParams('timeout=x')), undefined);
    assert.equal(checkpointLocation('/r', { name: 'p', namespace: 'n' }, 'c', Date.parse('2026-01-02T03:04:05.999Z')), '/r/checkpoints/checkpoint-p_n-c-2026-01-02T03:04:05Z.tar');
  });
});
