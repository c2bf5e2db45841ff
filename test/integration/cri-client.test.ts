/**
 * The gRPC CRI client against the test harness's real containerd (`npm run cluster:up`; the runner
 * sources `.cluster/env` for CONTAINER_RUNTIME_ENDPOINT). Walks one pod through its whole life —
 * sandbox with CNI, container, logs, exec, stop, removal — and checks the runtime's answers to
 * absent objects map to the client's contract (undefined, NotFound, idempotent success).
 *
 * Everything created carries the label `nodelet.dev/test=<unique id>` and is removed in `after`.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createCriClient } from '../../cri/grpc-client.js';
import type { CriClient } from '../../cri/grpc-client.js';
import { isCriDeadline, isCriError, isCriNotFound } from '../../cri/errors.js';
import type { ContainerConfig, PodSandboxConfig } from '../../cri/types.js';

const BUSYBOX = 'docker.io/library/busybox:1.35';
const TEST_LABEL = 'nodelet.dev/test';

/** `<RFC3339Nano> stdout F hello-from-cri`, one line of the CRI log format. */
const HELLO_LINE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2}) stdout F hello-from-cri$/m;

function isInPodCidr(ip: string): boolean {
  return /^10\.214\.0\.(\d{1,3})$/.test(ip) && Number(ip.split('.')[3]) < 256;
}

/** Polls `check` until it returns a value or `timeoutMs` passes. */
async function eventually<T>(what: string, timeoutMs: number, check: () => T | undefined): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

void describe('CRI client against the harness containerd', () => {
  const testId = randomUUID().slice(0, 8);
  const labels = { [TEST_LABEL]: testId };
  const endpoint = process.env.CONTAINER_RUNTIME_ENDPOINT;
  // The client dials lazily: with no endpoint, `before` fails every test and cleanup finds nothing.
  const cri: CriClient = createCriClient({ endpoint: endpoint ?? 'unix:///nonexistent/cri.sock', defaultTimeoutMs: 30_000 });
  const logDir = mkdtempSync(join(tmpdir(), `nodelet-cri-it-${testId}-`));
  const sandboxConfig: PodSandboxConfig = {
    metadata: { name: `cri-it-${testId}`, uid: randomUUID(), namespace: 'nodelet-test', attempt: 0 },
    hostname: `cri-it-${testId}`,
    logDirectory: logDir,
    labels,
    annotations: {},
  };
  let sandboxId = '';
  let containerId = '';

  before(() => {
    assert.ok(endpoint, 'CONTAINER_RUNTIME_ENDPOINT is not set: run `npm run cluster:up` and source .cluster/env');
  });

  after(async () => {
    // Whatever an earlier failure left behind: every sandbox (and with it its containers) of this run.
    const leftovers = await cri.runtime.listPodSandbox({ labelSelector: labels }).catch(() => []);
    for (const sandbox of leftovers) {
      await cri.runtime.stopPodSandbox(sandbox.id).catch(() => undefined);
      await cri.runtime.removePodSandbox(sandbox.id).catch(() => undefined);
    }
    cri.close();
    rmSync(logDir, { recursive: true, force: true });
  });

  void it('reports containerd as the runtime, speaking CRI v1, and ready', async () => {
    const version = await cri.runtime.version();
    assert.equal(version.runtimeName, 'containerd');
    assert.equal(version.runtimeApiVersion, 'v1');
    // The cluster's containerd runs runc with SystemdCgroup = false: the driver nodelet's pod cgroups have.
    assert.deepEqual(await cri.runtime.runtimeConfig(), { cgroupDriver: 'cgroupfs' }, 'RuntimeConfig');
    const status = await cri.runtime.status();
    const ready = Object.fromEntries(status.conditions.map((c) => [c.type, c.status]));
    assert.deepEqual(ready, { ...ready, RuntimeReady: true, NetworkReady: true });
  });

  void it('finds the imported busybox image and reports a made-up one as absent', async () => {
    const busybox = await cri.image.imageStatus({ image: BUSYBOX });
    assert.ok(busybox, 'busybox:1.35 is present');
    assert.ok(busybox.id.startsWith('sha256:'));
    assert.ok(busybox.repoTags.includes(BUSYBOX));
    assert.ok(busybox.size > 0n);
    assert.equal(await cri.image.imageStatus({ image: `docker.io/library/nodelet-made-up-${testId}:1` }), undefined);
    const all = await cri.image.listImages();
    assert.ok(all.some((i) => i.repoTags.includes('registry.k8s.io/pause:3.10')), 'the pause image is listed');
  });

  void it('runs a pod sandbox that gets an IP from the pod CIDR', async () => {
    sandboxId = await cri.runtime.runPodSandbox(sandboxConfig);
    const status = await cri.runtime.podSandboxStatus(sandboxId);
    assert.equal(status.state, 'SANDBOX_READY');
    assert.deepEqual(status.metadata, sandboxConfig.metadata);
    assert.equal(status.labels[TEST_LABEL], testId);
    assert.ok(isInPodCidr(status.network?.ip ?? ''), `sandbox IP ${status.network?.ip ?? '(none)'} is in 10.214.0.0/24`);
    const listed = await cri.runtime.listPodSandbox({ labelSelector: labels });
    assert.deepEqual(listed.map((s) => [s.id, s.state]), [[sandboxId, 'SANDBOX_READY']]);
  });

  void it('creates and starts a busybox container that writes CRI-format logs', async () => {
    const config: ContainerConfig = {
      metadata: { name: 'c', attempt: 0 },
      image: { image: BUSYBOX },
      command: ['sh', '-c', 'echo hello-from-cri; sleep 300'],
      args: [],
      workingDir: '',
      envs: [{ key: 'GREETING', value: 'hello' }],
      mounts: [],
      labels,
      annotations: {},
      logPath: 'c/0.log',
      stdin: false,
      stdinOnce: false,
      tty: false,
    };
    containerId = await cri.runtime.createContainer(sandboxId, config, sandboxConfig);
    assert.equal((await cri.runtime.containerStatus(containerId)).state, 'CONTAINER_CREATED');
    await cri.runtime.startContainer(containerId);
    const status = await cri.runtime.containerStatus(containerId);
    assert.equal(status.state, 'CONTAINER_RUNNING');
    assert.ok(status.startedAt > 0n);
    assert.equal(status.logPath, join(logDir, 'c/0.log'));
    const listed = await cri.runtime.listContainers({ podSandboxId: sandboxId, labelSelector: labels });
    assert.deepEqual(listed.map((c) => [c.id, c.state, c.metadata.name]), [[containerId, 'CONTAINER_RUNNING', 'c']]);

    const logFile = join(logDir, 'c', '0.log');
    const log = await eventually('the hello line in the container log', 10_000, () => {
      const text = existsSync(logFile) ? readFileSync(logFile, 'utf8') : '';
      return HELLO_LINE.test(text) ? text : undefined;
    });
    assert.match(log, HELLO_LINE);
  });

  void it('runs a command in the container with execSync', async () => {
    const result = await cri.runtime.execSync(containerId, ['sh', '-c', 'echo x; echo $GREETING >&2; exit 3'], 10);
    assert.deepEqual(
      [result.stdout.toString(), result.stderr.toString(), result.exitCode],
      ['x\n', 'hello\n', 3],
    );
  });

  void it('stops the container, killing it after the grace period', async () => {
    await cri.runtime.stopContainer(containerId, 2);
    const status = await cri.runtime.containerStatus(containerId);
    assert.equal(status.state, 'CONTAINER_EXITED');
    assert.ok([137, 143].includes(status.exitCode), `exit code ${status.exitCode} is 137 or 143`);
    assert.ok(status.finishedAt >= status.startedAt);
    await cri.runtime.stopContainer(containerId, 2);
  });

  void it('removes the container; removing it again succeeds and its status is NotFound', async () => {
    await cri.runtime.removeContainer(containerId);
    await cri.runtime.removeContainer(containerId);
    await cri.runtime.stopContainer(containerId, 0);
    await assert.rejects(cri.runtime.containerStatus(containerId), (e: unknown) => isCriNotFound(e));
    assert.deepEqual(await cri.runtime.listContainers({ labelSelector: labels }), []);
  });

  void it('stops and removes the sandbox, idempotently, after which nothing carries the test label', async () => {
    await cri.runtime.stopPodSandbox(sandboxId);
    assert.equal((await cri.runtime.podSandboxStatus(sandboxId)).state, 'SANDBOX_NOTREADY');
    await cri.runtime.removePodSandbox(sandboxId);
    await cri.runtime.stopPodSandbox(sandboxId);
    await cri.runtime.removePodSandbox(sandboxId);
    await assert.rejects(cri.runtime.podSandboxStatus(sandboxId), (e: unknown) => isCriNotFound(e));
    assert.deepEqual(await cri.runtime.listPodSandbox({ labelSelector: labels }), []);
  });

  void it('fails a pull of an image no registry can serve quickly, with a typed error', async () => {
    const started = Date.now();
    await assert.rejects(
      cri.image.pullImage({ image: 'docker.io/library/doesnotexist:1' }, undefined, undefined, { timeoutMs: 60_000 }),
      (e: unknown) => isCriError(e) && !isCriDeadline(e) && e.method === 'PullImage',
    );
    assert.ok(Date.now() - started < 20_000, `the pull failed within ${Date.now() - started} ms`);
  });
});
