import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { status } from '@grpc/grpc-js';
import { createCriClient } from './grpc-client.js';
import type { CriClient, CriLogger } from './grpc-client.js';
import { CriError, isCriCancelled, isCriDeadline, isCriError, isCriInvalidResponse, isCriNotFound, isCriUnavailable } from './errors.js';
import { startTestCriServer, TestServerStatus } from '../test/doubles/grpc-test-server.js';
import type { TestCriServer } from '../test/doubles/grpc-test-server.js';
import type { ContainerConfig, PodSandboxConfig } from './types.js';

const sandboxConfig: PodSandboxConfig = {
  metadata: { name: 'web', uid: 'uid-1', namespace: 'default', attempt: 0 },
  hostname: 'web',
  logDirectory: '/var/log/pods/default_web_uid-1',
  labels: { 'io.kubernetes.pod.uid': 'uid-1' },
  annotations: {},
};

const containerConfig: ContainerConfig = {
  metadata: { name: 'app', attempt: 0 },
  image: { image: 'busybox:1.35' },
  command: ['sleep', '300'],
  args: [],
  workingDir: '',
  envs: [],
  mounts: [],
  labels: {},
  annotations: {},
  logPath: 'app/0.log',
  stdin: false,
  stdinOnce: false,
  tty: false,
};

interface LogLine {
  readonly level: 'warn' | 'debug';
  readonly msg: string;
  readonly method: unknown;
}

function recordingLogger(lines: LogLine[]): CriLogger {
  return {
    warn: (obj, msg) => lines.push({ level: 'warn', msg, method: obj.method }),
    debug: (obj, msg) => lines.push({ level: 'debug', msg, method: obj.method }),
  };
}

function fail(code: status, details: string): never {
  throw new TestServerStatus(code, details);
}

void describe('gRPC CRI client against an in-process server', () => {
  let server: TestCriServer;
  let client: CriClient;
  let logs: LogLine[];
  let clock: number;

  before(async () => {
    server = await startTestCriServer();
  });

  after(async () => {
    await server.close();
  });

  const connect = (options: { defaultTimeoutMs?: number; pullTimeoutMs?: number } = {}): CriClient => {
    logs = [];
    clock = 1_000_000;
    client = createCriClient({
      endpoint: server.endpoint,
      defaultTimeoutMs: options.defaultTimeoutMs ?? 2000,
      pullTimeoutMs: options.pullTimeoutMs,
      logger: recordingLogger(logs),
      now: () => clock,
    });
    return client;
  };

  afterEach(() => {
    client.close();
    server.handlers.clear();
    server.requests.length = 0;
  });

  void it('reports the runtime version the server answers', async () => {
    server.handlers.set('Version', () => ({ version: '0.1.0', runtimeName: 'containerd', runtimeVersion: '1.6.20', runtimeApiVersion: 'v1' }));
    const version = await connect().runtime.version();
    assert.deepEqual(version, { version: '0.1.0', runtimeName: 'containerd', runtimeVersion: '1.6.20', runtimeApiVersion: 'v1' });
    assert.deepEqual(server.requests, [{ method: 'Version', request: { version: '0.1.0' } }]);
  });

  void it('throws CriNotFoundError when the server answers NOT_FOUND, and logs it at debug only', async () => {
    server.handlers.set('ContainerStatus', () => fail(status.NOT_FOUND, 'no such container'));
    await assert.rejects(connect().runtime.containerStatus('c1'), (e: unknown) => isCriNotFound(e) && e.method === 'ContainerStatus');
    assert.deepEqual(logs.map((l) => l.level), ['debug']);
  });

  void it('throws CriUnavailableError when the server answers UNAVAILABLE', async () => {
    server.handlers.set('ListContainers', () => fail(status.UNAVAILABLE, 'shutting down'));
    await assert.rejects(connect().runtime.listContainers(), (e: unknown) => isCriUnavailable(e));
  });

  void it('throws CriUnavailableError quickly when nothing listens on the socket', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nodelet-cri-missing-'));
    const missing = createCriClient({ endpoint: `unix://${join(dir, 'none.sock')}`, defaultTimeoutMs: 5000 });
    const started = Date.now();
    try {
      await assert.rejects(missing.runtime.version(), (e: unknown) => isCriUnavailable(e));
      assert.ok(Date.now() - started < 4000, 'failed fast instead of waiting for the deadline');
    } finally {
      missing.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  void it('throws CriDeadlineError when the server answers later than the call deadline', async () => {
    server.handlers.set('ListPodSandbox', async () => {
      await sleep(500);
      return { items: [] };
    });
    const started = Date.now();
    await assert.rejects(connect({ defaultTimeoutMs: 5000 }).runtime.listPodSandbox(undefined, { timeoutMs: 100 }), (e: unknown) =>
      isCriDeadline(e),
    );
    assert.ok(Date.now() - started < 450, 'the per-call deadline, not the default, applied');
  });

  void it('cancels a call in flight when its signal aborts, with CriCancelledError, and logs no warning', async () => {
    let release: () => void = () => undefined;
    server.handlers.set('StopContainer', () => new Promise<object>((resolve) => (release = () => { resolve({}); })));
    const controller = new AbortController();
    const stopping = connect({ defaultTimeoutMs: 5000 }).runtime.stopContainer('c1', 30, { signal: controller.signal });
    // Wait for the call to arrive (a fixed pause was too short on a loaded machine).
    for (let waited = 0; server.requests.length === 0 && waited < 5000; waited += 20) await sleep(20);
    assert.equal(server.requests.length, 1, 'the call reached the runtime before the abort');
    controller.abort(new Error('lost the job lock'));
    await assert.rejects(stopping, (e: unknown) => isCriCancelled(e) && e.message.length > 0 && e.method === 'StopContainer');
    release();
    assert.deepEqual(logs.filter((l) => l.level === 'warn'), []);
  });

  void it('rejects at once, sending nothing, when the signal is already aborted', async () => {
    server.handlers.set('ListContainers', () => ({ containers: [] }));
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(connect().runtime.listContainers(undefined, { signal: controller.signal }), (e: unknown) => isCriCancelled(e));
    assert.deepEqual(server.requests, []);
  });

  void it('extends the stopContainer deadline by the stop timeout', async () => {
    server.handlers.set('StopContainer', async () => {
      await sleep(400);
      return {};
    });
    await connect({ defaultTimeoutMs: 150 }).runtime.stopContainer('c1', 1);
    assert.deepEqual(server.requests, [{ method: 'StopContainer', request: { containerId: 'c1', timeout: '1' } }]);
  });

  void it('extends the execSync deadline by the exec timeout and returns output as buffers', async () => {
    server.handlers.set('ExecSync', async () => {
      await sleep(300);
      return { stdout: Buffer.from('x\n'), stderr: Buffer.from(''), exitCode: 2 };
    });
    const result = await connect({ defaultTimeoutMs: 150 }).runtime.execSync('c1', ['echo', 'x'], 1);
    assert.deepEqual(result, { stdout: Buffer.from('x\n'), stderr: Buffer.alloc(0), exitCode: 2 });
  });

  void it('asks Exec, Attach and PortForward for a streaming URL with the streams as sent, and refuses an empty URL', async () => {
    server.handlers.set('Exec', () => Promise.resolve({ url: 'http://127.0.0.1:1/exec/t1' }));
    server.handlers.set('Attach', () => Promise.resolve({ url: 'http://127.0.0.1:1/attach/t2' }));
    server.handlers.set('PortForward', () => Promise.resolve({ url: '' }));
    const runtime = connect().runtime;
    const streams = { stdin: true, stdout: true, stderr: false, tty: true };
    assert.equal(await runtime.exec('c1', ['sh', '-c', 'true'], streams), 'http://127.0.0.1:1/exec/t1');
    assert.equal(await runtime.attach('c1', streams), 'http://127.0.0.1:1/attach/t2');
    await assert.rejects(runtime.portForward('s1', [80]), (e: unknown) => isCriInvalidResponse(e) && e.method === 'PortForward');
    assert.deepEqual(server.requests, [
      { method: 'Exec', request: { containerId: 'c1', cmd: ['sh', '-c', 'true'], tty: true, stdin: true, stdout: true, stderr: false } },
      { method: 'Attach', request: { containerId: 'c1', stdin: true, tty: true, stdout: true, stderr: false } },
      { method: 'PortForward', request: { podSandboxId: 's1', port: [80] } },
    ]);
  });

  void it('asks ReopenContainerLog with the container ID, and passes a refusal on as a CriError', async () => {
    server.handlers.set('ReopenContainerLog', () => Promise.resolve({}));
    const runtime = connect().runtime;
    await runtime.reopenContainerLog('c1');
    server.handlers.set('ReopenContainerLog', () => fail(status.FAILED_PRECONDITION, 'container is not running'));
    await assert.rejects(runtime.reopenContainerLog('c2'), (e: unknown) => isCriError(e) && e.method === 'ReopenContainerLog' && e.code === status.FAILED_PRECONDITION);
    assert.deepEqual(server.requests, [
      { method: 'ReopenContainerLog', request: { containerId: 'c1' } },
      { method: 'ReopenContainerLog', request: { containerId: 'c2' } },
    ]);
  });

  void it('gives pullImage its own long deadline instead of the default one', async () => {
    server.handlers.set('PullImage', async () => {
      await sleep(300);
      return { imageRef: 'sha256:abc' };
    });
    assert.equal(await connect({ defaultTimeoutMs: 100 }).image.pullImage({ image: 'busybox:1.35' }), 'sha256:abc');
  });

  void it('honours a configured pull timeout', async () => {
    server.handlers.set('PullImage', async () => {
      await sleep(500);
      return { imageRef: 'sha256:abc' };
    });
    await assert.rejects(connect({ pullTimeoutMs: 100 }).image.pullImage({ image: 'busybox:1.35' }), (e: unknown) => isCriDeadline(e));
  });

  void it('rejects an empty sandbox ID from RunPodSandbox as an invalid response', async () => {
    server.handlers.set('RunPodSandbox', () => ({ podSandboxId: '' }));
    await assert.rejects(connect().runtime.runPodSandbox(sandboxConfig), (e: unknown) => isCriInvalidResponse(e));
    assert.deepEqual(logs.map((l) => [l.level, l.method]), [['warn', 'RunPodSandbox']]);
  });

  void it('rejects an empty container ID from CreateContainer as an invalid response', async () => {
    server.handlers.set('CreateContainer', () => ({ containerId: '' }));
    await assert.rejects(connect().runtime.createContainer('sb', containerConfig, sandboxConfig), (e: unknown) =>
      isCriInvalidResponse(e),
    );
  });

  void it('rejects an empty image reference from PullImage as an invalid response', async () => {
    server.handlers.set('PullImage', () => ({ imageRef: '' }));
    await assert.rejects(connect().image.pullImage({ image: 'busybox' }), (e: unknown) => isCriInvalidResponse(e));
  });

  void it('always sends the sandbox config with CreateContainer', async () => {
    server.handlers.set('CreateContainer', () => ({ containerId: 'c9' }));
    assert.equal(await connect().runtime.createContainer('sb', containerConfig, sandboxConfig), 'c9');
    const request = server.requests[0]?.request as { sandboxConfig: { metadata: unknown; logDirectory: string } };
    assert.deepEqual(request.sandboxConfig.metadata, sandboxConfig.metadata);
    assert.equal(request.sandboxConfig.logDirectory, sandboxConfig.logDirectory);
  });

  void it('treats NOT_FOUND on stop and remove of sandboxes and containers as success', async () => {
    for (const method of ['StopPodSandbox', 'RemovePodSandbox', 'StopContainer', 'RemoveContainer', 'RemoveImage']) {
      server.handlers.set(method, () => fail(status.NOT_FOUND, 'gone'));
    }
    const cri = connect();
    await cri.runtime.stopPodSandbox('sb');
    await cri.runtime.removePodSandbox('sb');
    await cri.runtime.stopContainer('c', 0);
    await cri.runtime.removeContainer('c');
    await cri.image.removeImage({ image: 'busybox' });
    assert.equal(server.requests.length, 5);
    assert.equal(logs.filter((l) => l.level === 'warn').length, 0);
  });

  void it('still throws other failures of an idempotent remove', async () => {
    server.handlers.set('RemoveContainer', () => fail(status.UNKNOWN, 'device busy'));
    await assert.rejects(connect().runtime.removeContainer('c'), (e: unknown) => isCriError(e) && e.code === status.UNKNOWN);
  });

  void it('refuses an empty ID argument without asking the runtime', async () => {
    const cri = connect();
    await assert.rejects(cri.runtime.removeContainer(''), (e: unknown) => e instanceof CriError && e.code === status.INVALID_ARGUMENT);
    await assert.rejects(cri.runtime.stopPodSandbox(''), (e: unknown) => e instanceof CriError && e.code === status.INVALID_ARGUMENT);
    assert.equal(server.requests.length, 0);
  });

  void it('returns undefined from imageStatus when the runtime has no such image', async () => {
    server.handlers.set('ImageStatus', (request) =>
      (request.image as { image: string }).image === 'present'
        ? { image: { id: 'sha256:1', repoTags: ['present'], size: '42' } }
        : {},
    );
    const cri = connect();
    assert.deepEqual(await cri.image.imageStatus({ image: 'present' }), {
      id: 'sha256:1',
      repoTags: ['present'],
      repoDigests: [],
      size: 42n,
      username: '',
    });
    assert.equal(await cri.image.imageStatus({ image: 'absent' }), undefined);
    server.handlers.set('ImageStatus', () => fail(status.NOT_FOUND, 'no image'));
    assert.equal(await cri.image.imageStatus({ image: 'absent' }), undefined);
  });

  void it('lists sandboxes with their labels, sending the filter it was given', async () => {
    server.handlers.set('ListPodSandbox', () => ({
      items: [{ id: 's1', metadata: { name: 'web', uid: 'u', namespace: 'ns', attempt: 1 }, state: 'SANDBOX_READY', createdAt: '7', labels: { a: 'b' } }],
    }));
    const sandboxes = await connect().runtime.listPodSandbox({ labelSelector: { a: 'b' } });
    assert.deepEqual(sandboxes, [
      {
        id: 's1',
        metadata: { name: 'web', uid: 'u', namespace: 'ns', attempt: 1 },
        state: 'SANDBOX_READY',
        createdAt: 7n,
        labels: { a: 'b' },
        annotations: {},
        runtimeHandler: '',
      },
    ]);
    assert.deepEqual(server.requests[0]?.request, { filter: { id: '', labelSelector: { a: 'b' }, state: null } });
  });

  void it('warns once about a repeated identical failure, again after a success or a minute', async () => {
    server.handlers.set('ContainerStatus', () => fail(status.UNKNOWN, 'runtime hiccup'));
    const cri = connect();
    const attempt = () => cri.runtime.containerStatus('c1').catch(() => undefined);
    await attempt();
    await attempt();
    clock += 59_000;
    await attempt();
    clock += 2_000;
    await attempt();
    server.handlers.set('ContainerStatus', () => ({
      status: { id: 'c1', metadata: { name: 'app' }, state: 'CONTAINER_RUNNING' },
    }));
    assert.equal((await cri.runtime.containerStatus('c1')).state, 'CONTAINER_RUNNING');
    server.handlers.set('ContainerStatus', () => fail(status.UNKNOWN, 'runtime hiccup'));
    await attempt();
    assert.deepEqual(
      logs.map((l) => l.level),
      ['warn', 'debug', 'debug', 'warn', 'warn'],
    );
  });

  void it('warns at once when the failure of the same call changes', async () => {
    const cri = connect();
    server.handlers.set('Status', () => fail(status.UNKNOWN, 'first'));
    await cri.runtime.status().catch(() => undefined);
    server.handlers.set('Status', () => fail(status.UNKNOWN, 'second'));
    await cri.runtime.status().catch(() => undefined);
    assert.deepEqual(logs.map((l) => l.level), ['warn', 'warn']);
  });

  void it('rejects calls after close', async () => {
    server.handlers.set('Version', () => ({ version: '0.1.0', runtimeName: 'x', runtimeVersion: 'y', runtimeApiVersion: 'v1' }));
    const cri = connect();
    cri.close();
    await assert.rejects(cri.runtime.version(), (e: unknown) => isCriError(e));
  });
});
