/**
 * Each hook action run once: exec against a stub runtime, httpGet against a real HTTP server on
 * loopback, sleep on the fake clock; what succeeds, what a failure says, and that every action
 * stops when its signal aborts.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { CallOptions, ExecSyncResult, RuntimeService } from '../../cri/types.js';
import { createFakeClock, settle } from '../../test/doubles/fake-clock.js';
import { basePod } from '../../test/doubles/pod-fixtures.js';
import type { HookAction } from './hook-spec.js';
import { LIFECYCLE_USER_AGENT, runHook, type HookTarget } from './run-hook.js';

const pod = basePod();
const target: HookTarget = { pod, container: { name: 'app', ports: [{ name: 'web', containerPort: 0 }] }, containerId: 'c1', podIp: '127.0.0.1' };

interface ExecCall {
  readonly cmd: readonly string[];
  readonly timeoutSeconds: number;
  readonly signal: AbortSignal | undefined;
}

function execRuntime(answer: () => Promise<ExecSyncResult>): { runtime: RuntimeService; calls: ExecCall[] } {
  const calls: ExecCall[] = [];
  const runtime = {
    execSync: (_id: string, cmd: readonly string[], timeoutSeconds: number, options?: CallOptions) => {
      calls.push({ cmd, timeoutSeconds, signal: options?.signal });
      return answer();
    },
  } as unknown as RuntimeService;
  return { runtime, calls };
}

function result(exitCode: number, stdout = '', stderr = ''): Promise<ExecSyncResult> {
  return Promise.resolve({ stdout: Buffer.from(stdout), stderr: Buffer.from(stderr), exitCode });
}

const exec = (command: string[]): HookAction => ({ kind: 'exec', command });

describe('exec hooks', () => {
  it('succeed on exit code 0, with no timeout for postStart and the given bound for preStop', async () => {
    const { runtime, calls } = execRuntime(() => result(0));
    const deps = { runtime, clock: createFakeClock() };
    assert.deepEqual(await runHook(deps, { action: exec(['touch', '/x']), target }), { ok: true });
    assert.deepEqual(await runHook(deps, { action: exec(['touch', '/y']), target, timeoutSeconds: 25 }), { ok: true });
    assert.deepEqual(calls.map((c) => [c.cmd, c.timeoutSeconds]), [[['touch', '/x'], 0], [['touch', '/y'], 25]]);
  });

  it("fail on a non-zero exit with the kubelet's message", async () => {
    const { runtime } = execRuntime(() => result(1, 'out\n', 'bad\n'));
    const outcome = await runHook({ runtime, clock: createFakeClock() }, { action: exec(['sh', '-c', 'exit 1']), target });
    assert.deepEqual(outcome, {
      ok: false,
      message: `Exec lifecycle hook ([sh -c exit 1]) for Container "app" in Pod "web_default(uid-1)" failed - error: command 'sh -c exit 1' exited with 1: bad\n, message: "out\\nbad\\n"`,
    });
  });

  it('fail when the runtime call fails', async () => {
    const { runtime } = execRuntime(() => Promise.reject(new Error('container is not running')));
    const outcome = await runHook({ runtime, clock: createFakeClock() }, { action: exec(['true']), target });
    assert.equal(outcome.ok, false);
    assert.match(outcome.ok ? '' : outcome.message, /failed - error: container is not running, message: ""$/);
  });

  it('stop when the signal aborts: the runtime call gets the signal and the run rejects, never a failure', async () => {
    const { runtime, calls } = execRuntime(() => new Promise<ExecSyncResult>(() => undefined));
    const controller = new AbortController();
    const run = runHook({ runtime, clock: createFakeClock() }, { action: exec(['sleep', '100']), target, signal: controller.signal });
    await settle();
    assert.equal(calls[0]?.signal, controller.signal, 'the ExecSync call is cancellable');
    controller.abort(new Error('lost the lock'));
    await assert.rejects(run, /lost the lock/);
  });
});

describe('invalid hooks', () => {
  it('fail at once with "Cannot run handler"', async () => {
    const { runtime, calls } = execRuntime(() => result(0));
    const outcome = await runHook({ runtime, clock: createFakeClock() }, { action: { kind: 'invalid', reason: 'the handler names no action (exec, httpGet or sleep)' }, target });
    assert.deepEqual(outcome, { ok: false, message: 'Cannot run handler: invalid handler: the handler names no action (exec, httpGet or sleep)' });
    assert.equal(calls.length, 0);
  });
});

describe('httpGet hooks against a loopback server', () => {
  let server: http.Server;
  let port = 0;
  const seen: { url: string | undefined; headers: http.IncomingHttpHeaders }[] = [];
  /** Silent requests whose client went away. */
  let abandoned = 0;
  const noRuntime = execRuntime(() => result(0)).runtime;
  before(async () => {
    server = http.createServer((req, res) => {
      seen.push({ url: req.url, headers: req.headers });
      if (req.url === '/silent') {
        // Never answers; counts the client hanging up.
        res.on('close', () => abandoned++);
        return;
      }
      res.writeHead(req.url === '/error' ? 500 : 200);
      res.end('body');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as net.AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => { resolve(); }));
  });

  const get = (path: string, over: Partial<Extract<HookAction, { kind: 'httpGet' }>> = {}): HookAction => ({ kind: 'httpGet', scheme: 'HTTP', host: '', port, path, headers: [], ...over });

  it("GETs the pod IP's port and path with the action's headers and the kubelet's User-Agent", async () => {
    const outcome = await runHook({ runtime: noRuntime, clock: createFakeClock() }, { action: get('/started?x=1', { headers: [{ name: 'X-Hook', value: 'postStart' }] }), target });
    assert.deepEqual(outcome, { ok: true });
    const request = seen.at(-1);
    assert.equal(request?.url, '/started?x=1');
    assert.equal(request?.headers['x-hook'], 'postStart');
    assert.equal(request?.headers['user-agent'], LIFECYCLE_USER_AGENT);
  });

  it('resolves a named port from the container', async () => {
    const named: HookTarget = { ...target, container: { name: 'app', ports: [{ name: 'web', containerPort: port }] } };
    assert.deepEqual(await runHook({ runtime: noRuntime, clock: createFakeClock() }, { action: get('/named', { port: 'web' }), target: named }), { ok: true });
    assert.equal(seen.at(-1)?.url, '/named');
  });

  it('counts any HTTP answer as success, a 500 too, as the kubelet (it checks only the transport error)', async () => {
    assert.deepEqual(await runHook({ runtime: noRuntime, clock: createFakeClock() }, { action: get('/error'), target }), { ok: true });
  });

  it("fails when nothing listens, with the kubelet's message", async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadPort = (closed.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => { resolve(); }));
    const outcome = await runHook({ runtime: noRuntime, clock: createFakeClock() }, { action: get('/x', { port: deadPort }), target });
    assert.equal(outcome.ok, false);
    const message = outcome.ok ? '' : outcome.message;
    assert.ok(message.startsWith(`HTTP lifecycle hook (/x) for Container "app" in Pod "web_default(uid-1)" failed - error: Get "http://127.0.0.1:${deadPort}/x": `), message);
    assert.match(message, /ECONNREFUSED/);
  });

  it('fails when the server stays silent past the bound', async () => {
    const outcome = await runHook({ runtime: noRuntime, clock: createFakeClock() }, { action: get('/silent'), target, timeoutSeconds: 0.2 });
    assert.equal(outcome.ok, false);
    assert.match(outcome.ok ? '' : outcome.message, /Client\.Timeout exceeded/);
  });

  it('stops a request in flight when the signal aborts', async () => {
    const controller = new AbortController();
    const before = seen.length;
    const run = runHook({ runtime: noRuntime, clock: createFakeClock() }, { action: get('/silent'), target, signal: controller.signal });
    for (let i = 0; i < 200 && seen.length === before; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.equal(seen.length, before + 1, 'the request reached the server');
    const abandonedBefore = abandoned;
    controller.abort(new Error('agent stopping'));
    await assert.rejects(run, /agent stopping/);
    for (let i = 0; i < 200 && abandoned === abandonedBefore; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.equal(abandoned, abandonedBefore + 1, 'the request was really cancelled: the server saw the client hang up');
  });
});

describe('sleep hooks on the fake clock', () => {
  const noRuntime = execRuntime(() => result(0)).runtime;

  it('resolve once the seconds have passed, not before', async () => {
    const clock = createFakeClock();
    let done = false;
    const run = runHook({ runtime: noRuntime, clock }, { action: { kind: 'sleep', seconds: 5 }, target }).then((o) => {
      done = true;
      return o;
    });
    await clock.advance(4999);
    assert.equal(done, false);
    await clock.advance(1);
    assert.deepEqual(await run, { ok: true });
  });

  it('stop at once when the signal aborts, leaving no timer behind, counted as ended early (one that finished is not)', async () => {
    const clock = createFakeClock();
    const controller = new AbortController();
    let endedEarly = 0;
    const lifecycleMetrics = { httpFallback: () => undefined, sleepTerminatedEarly: () => { endedEarly += 1; } };
    const finished = runHook({ runtime: noRuntime, clock, lifecycleMetrics }, { action: { kind: 'sleep', seconds: 1 }, target });
    await clock.advance(1000);
    await finished;
    const run = runHook({ runtime: noRuntime, clock, lifecycleMetrics }, { action: { kind: 'sleep', seconds: 60 }, target, signal: controller.signal });
    await settle();
    assert.equal(clock.pendingTimers(), 1);
    controller.abort(new Error('cancelled'));
    await assert.rejects(run, /cancelled/);
    assert.equal(clock.pendingTimers(), 0);
    assert.equal(endedEarly, 1);
  });
});
