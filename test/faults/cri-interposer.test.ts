/**
 * The CRI interposer against an in-process runtime (no cluster needed): it forwards calls of both
 * services unchanged, passes the runtime's errors on with their codes, fires its one-shot trigger
 * at the exact step (after the runtime answered but before the agent hears it; or while the
 * runtime is still working), aims triggers at IDs it saw created, and cancels the runtime's call
 * when the agent's side goes away.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, afterEach, before, describe, it } from 'node:test';
import { Client, Metadata, Server, ServerCredentials, credentials, status } from '@grpc/grpc-js';
import type { ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import { createCriClient, type CriClient } from '../../cri/grpc-client.js';
import { isCriNotFound } from '../../cri/errors.js';
import { criMethod } from '../../cri/proto.js';
import type { ContainerConfig, PodSandboxConfig } from '../../cri/types.js';
import { startTestCriServer, TestServerStatus, type TestCriServer } from '../doubles/grpc-test-server.js';
import { CriInterposer } from './cri-interposer.js';

const sandboxConfig: PodSandboxConfig = {
  metadata: { name: 'web-7f3a', uid: 'uid-1', namespace: 'default', attempt: 0 },
  hostname: 'web',
  logDirectory: '/var/log/pods/default_web_uid-1',
  labels: { 'io.kubernetes.pod.uid': 'uid-1' },
  annotations: {},
};

function containerConfig(name: string): ContainerConfig {
  return {
    metadata: { name, attempt: 0 },
    image: { image: 'busybox:1.35' },
    command: ['sleep', '300'],
    args: [],
    workingDir: '',
    envs: [],
    mounts: [],
    labels: {},
    annotations: {},
    logPath: `${name}/0.log`,
    stdin: false,
    stdinOnce: false,
    tty: false,
  };
}

describe('CRI interposer', () => {
  let runtime: TestCriServer;
  let interposer: CriInterposer;
  let client: CriClient;

  before(async () => {
    runtime = await startTestCriServer();
    interposer = await CriInterposer.start(runtime.endpoint);
  });

  after(async () => {
    await interposer.close();
    await runtime.close();
  });

  afterEach(() => {
    client.close();
    interposer.disarm();
    runtime.requests.length = 0;
  });

  const connect = (): CriClient => {
    client = createCriClient({ endpoint: interposer.endpoint, defaultTimeoutMs: 5000 });
    return client;
  };

  it('forwards RuntimeService and ImageService calls unchanged and passes the answers back', async () => {
    runtime.handlers.set('RunPodSandbox', () => ({ podSandboxId: 'sb-1' }));
    runtime.handlers.set('PullImage', () => ({ imageRef: 'sha256:abc' }));
    const cri = connect();
    assert.equal(await cri.runtime.runPodSandbox(sandboxConfig, 'runc'), 'sb-1');
    assert.equal(await cri.image.pullImage({ image: 'busybox:1.35' }), 'sha256:abc');
    assert.deepEqual(runtime.requests.map((r) => r.method), ['RunPodSandbox', 'PullImage']);
    const forwarded = runtime.requests[0]?.request as { config: { metadata: { name: string } }; runtimeHandler: string };
    assert.equal(forwarded.config.metadata.name, 'web-7f3a');
    assert.equal(forwarded.runtimeHandler, 'runc');
    assert.deepEqual(interposer.idsCreated('RunPodSandbox', 'web-7f3a'), ['sb-1']);
  });

  it("passes the runtime's error status on with its code", async () => {
    runtime.handlers.set('ContainerStatus', () => {
      throw new TestServerStatus(status.NOT_FOUND, 'no such container');
    });
    await assert.rejects(connect().runtime.containerStatus('gone'), (e: unknown) => isCriNotFound(e));
  });

  it("fires a 'returned' trigger after the runtime answered and before the agent hears the answer", async () => {
    runtime.handlers.set('RunPodSandbox', () => ({ podSandboxId: 'sb-2' }));
    let agentHeard = false;
    let seenAtFire: { runtimeHad: number; agentHeard: boolean } | undefined;
    interposer.arm({
      phase: 'returned',
      match: (call) => call.method === 'RunPodSandbox' && call.mentions('web-7f3a'),
      fire: async () => {
        await sleep(50);
        seenAtFire = { runtimeHad: runtime.requests.length, agentHeard };
      },
    });
    const id = await connect().runtime.runPodSandbox(sandboxConfig);
    agentHeard = true;
    assert.equal(id, 'sb-2');
    assert.deepEqual(seenAtFire, { runtimeHad: 1, agentHeard: false });
    assert.equal(interposer.fired()?.method, 'RunPodSandbox');
  });

  it('does not fire for a call that does not mention the pod, and fires only once', async () => {
    runtime.handlers.set('RunPodSandbox', () => ({ podSandboxId: 'sb-3' }));
    let firings = 0;
    const count = (): Promise<void> => {
      firings++;
      return Promise.resolve();
    };
    interposer.arm({
      phase: 'returned',
      match: (call) => call.method === 'RunPodSandbox' && call.mentions('other-pod'),
      fire: count,
    });
    await connect().runtime.runPodSandbox(sandboxConfig);
    assert.equal(firings, 0);
    assert.equal(interposer.fired(), undefined);
    interposer.arm({ phase: 'returned', match: (call) => call.method === 'RunPodSandbox', fire: count });
    await client.runtime.runPodSandbox(sandboxConfig);
    await client.runtime.runPodSandbox(sandboxConfig);
    assert.equal(firings, 1);
  });

  it('aims a trigger on StartContainer at the container it saw created for one pod and name', async () => {
    let next = 0;
    runtime.handlers.set('CreateContainer', () => ({ containerId: `c-${++next}` }));
    runtime.handlers.set('StartContainer', () => ({}));
    const cri = connect();
    const first = await cri.runtime.createContainer('sb', containerConfig('first'), sandboxConfig);
    const second = await cri.runtime.createContainer('sb', containerConfig('second'), sandboxConfig);
    assert.deepEqual(interposer.idsCreated('CreateContainer', 'web-7f3a', 'second'), [second]);
    const started: string[] = [];
    interposer.arm({
      phase: 'returned',
      match: (call) => call.method === 'StartContainer' && interposer.idsCreated('CreateContainer', 'web-7f3a', 'second').some((id) => call.mentions(id)),
      fire: (call) => Promise.resolve(void started.push(call.method)),
    });
    await cri.runtime.startContainer(first);
    assert.deepEqual(started, []);
    await cri.runtime.startContainer(second);
    assert.deepEqual(started, ['StartContainer']);
  });

  it("fires an 'in-flight' trigger while the runtime is still working, and reports when it had already answered", async () => {
    runtime.handlers.set('StopContainer', async () => {
      await sleep(400);
      return {};
    });
    let firedAt = 0;
    interposer.arm({ phase: 'in-flight', inFlightDelayMs: 100, match: (call) => call.method === 'StopContainer', fire: () => Promise.resolve(void (firedAt = Date.now())) });
    const startedAt = Date.now();
    await connect().runtime.stopContainer('c-1', 1);
    const doneAt = Date.now();
    assert.ok(firedAt > startedAt && firedAt < doneAt, 'fired before the runtime answered');
    assert.equal(interposer.fired()?.runtimeStillWorking, true);

    runtime.handlers.set('StopContainer', () => ({}));
    interposer.arm({ phase: 'in-flight', inFlightDelayMs: 200, match: (call) => call.method === 'StopContainer', fire: () => Promise.resolve() });
    await client.runtime.stopContainer('c-1', 1);
    await sleep(300);
    assert.equal(interposer.fired()?.runtimeStillWorking, false);
  });
});

describe('CRI interposer when the agent goes away mid-call', () => {
  it("cancels the runtime's call", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'nodelet-upstream-'));
    const server = new Server();
    const seen = { arrived: false, cancelled: false };
    const definition = criMethod('RuntimeService', 'StopContainer');
    const identity = (b: Buffer): Buffer => b;
    server.register(definition.path, (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => {
      seen.arrived = true;
      call.on('cancelled', () => {
        seen.cancelled = true;
      });
      setTimeout(() => {
        callback(null, Buffer.alloc(0));
      }, 3000).unref();
    }, identity, identity, 'unary');
    await new Promise<void>((resolve, reject) => {
      server.bindAsync(`unix://${path.join(dir, 'cri.sock')}`, ServerCredentials.createInsecure(), (error) => {
        if (error === null) resolve();
        else reject(error);
      });
    });
    const interposer = await CriInterposer.start(`unix://${path.join(dir, 'cri.sock')}`);
    // The agent's side: a raw client whose call is cancelled (what its death does to every open call).
    const agent = new Client(interposer.endpoint, credentials.createInsecure());
    try {
      const call = agent.makeUnaryRequest(definition.path, identity, identity, Buffer.alloc(0), new Metadata(), () => undefined);
      while (!seen.arrived) await sleep(10);
      call.cancel();
      for (let i = 0; i < 200 && !seen.cancelled; i++) await sleep(10);
      assert.equal(seen.cancelled, true);
    } finally {
      agent.close();
      await interposer.close();
      server.forceShutdown();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
