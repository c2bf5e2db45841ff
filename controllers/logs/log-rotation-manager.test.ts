/**
 * The log rotation manager against the recording fake runtime and a real temporary pod log root:
 * which files it renames, compresses and removes, that it asks the runtime to reopen the log, and
 * that a refused reopen puts the log back.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { appendFile, mkdir, mkdtemp, readdir, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { pino } from 'pino';
import { CriError } from '../../cri/errors.js';
import { containerLabels, sandboxLabels } from '../../reconcilers/model/runtime-labels.js';
import { createFakeClock, type FakeClock } from '../../test/doubles/fake-clock.js';
import { FakeRuntime } from '../../test/doubles/fake-runtime.js';
import { isLogRotationError, LogRotationManager, type LogRotationPolicy } from './log-rotation-manager.js';
import { rotationTimestamp } from './rotation-plan.js';
import { createContainerLogLink } from '../../reconcilers/model/container-log-links.js';

const NODE = 'node-a';
const POLICY: LogRotationPolicy = { maxSizeBytes: 100, maxFiles: 3 };

interface Setup {
  readonly clock: FakeClock;
  readonly runtime: FakeRuntime;
  readonly manager: LogRotationManager;
}

let logRoot = '';
beforeEach(async () => {
  logRoot = await mkdtemp(path.join(os.tmpdir(), 'nodelet-logrot-'));
});
afterEach(async () => {
  await rm(logRoot, { recursive: true, force: true });
});

function setup(policy = POLICY): Setup {
  const clock = createFakeClock();
  const runtime = new FakeRuntime({ now: () => clock.now(), images: ['busybox:1.35'] });
  const manager = new LogRotationManager({ runtime, nodeName: NODE, podLogDir: logRoot, policy, clock, logger: pino({ level: 'silent' }) });
  return { clock, runtime, manager };
}

/** Starts a container `main` of pod `uid` whose log is `<dir>/main/0.log` holding `content`; returns its ID and log path. */
async function running(s: Setup, uid: string, content: string, options: { node?: string; logDirectory?: string } = {}): Promise<{ id: string; log: string }> {
  const key = { uid, namespace: 'ns', name: `pod-${uid}` };
  const logDirectory = options.logDirectory ?? path.join(logRoot, `ns_pod-${uid}_${uid}`);
  const node = options.node ?? NODE;
  const config = { metadata: { ...key, attempt: 0 }, hostname: key.name, logDirectory, labels: sandboxLabels(key, node), annotations: {} };
  const sandboxId = await s.runtime.runPodSandbox(config);
  const id = await s.runtime.createContainer(sandboxId, {
    metadata: { name: 'main', attempt: 0 },
    image: { image: 'busybox:1.35' },
    command: [], args: [], workingDir: '', envs: [], mounts: [],
    labels: containerLabels(key, 'main', node),
    annotations: {},
    logPath: 'main/0.log',
    stdin: false, stdinOnce: false, tty: false,
  }, config);
  await s.runtime.startContainer(id);
  const log = path.join(logDirectory, 'main', '0.log');
  await mkdir(path.dirname(log), { recursive: true });
  await writeFile(log, content);
  return { id, log };
}

async function names(log: string): Promise<string[]> {
  return (await readdir(path.dirname(log))).sort();
}

const big = 'x'.repeat(150);

describe('LogRotationManager', () => {
  it("keeps the container's log link valid: the link names the log's path, which the reopened file takes again", async () => {
    const s = setup();
    const { id, log } = await running(s, 'a', big);
    const dir = path.join(logRoot, 'links');
    const owner = { podName: 'pod-a', podNamespace: 'ns', containerName: 'main', containerId: id };
    assert.equal(await createContainerLogLink({ dir, owner, logFile: log }), 'created');
    const [link] = await readdir(dir);
    assert.ok(link !== undefined);
    assert.equal(await s.manager.rotateContainer(id), 'rotated');
    await appendFile(log, 'after the rotation\n');
    assert.equal(await readlink(path.join(dir, link)), log);
    assert.equal(await readFile(path.join(dir, link), 'utf8'), 'after the rotation\n', 'the link reads the fresh log, not the rotated one');
  });

  it('renames a log at the size to <n>.log.<timestamp>, asks the runtime to reopen it, and the fresh file is the log', async () => {
    const s = setup();
    const { id, log } = await running(s, 'a', big);
    assert.equal(await s.manager.rotateContainer(id), 'rotated');
    const stamp = rotationTimestamp(new Date(s.clock.now()));
    assert.deepEqual(await names(log), ['0.log', `0.log.${stamp}`]);
    assert.equal(await readFile(path.join(path.dirname(log), `0.log.${stamp}`), 'utf8'), big);
    assert.equal(await readFile(log, 'utf8'), '', 'the runtime opened a fresh, empty file');
    assert.deepEqual(s.runtime.callsTo('reopenContainerLog').map((c) => c.args[0]), [id]);
  });

  it('leaves a log below the size alone and asks the runtime nothing', async () => {
    const s = setup();
    const { id, log } = await running(s, 'a', 'x'.repeat(99));
    assert.equal(await s.manager.rotateContainer(id), 'below-size');
    assert.deepEqual(await names(log), ['0.log']);
    assert.equal(s.runtime.callsTo('reopenContainerLog').length, 0);
  });

  it('renames the log back when the runtime refuses to reopen it, and the round fails', async () => {
    const s = setup();
    const { log } = await running(s, 'a', big);
    s.runtime.injectError('reopenContainerLog', new CriError({ method: 'ReopenContainerLog', code: GrpcStatus.UNKNOWN, message: 'boom' }));
    await assert.rejects(s.manager.rotateAll(), (err: unknown) => isLogRotationError(err) && err.failures === 1);
    assert.deepEqual(await names(log), ['0.log']);
    assert.equal(await readFile(log, 'utf8'), big, 'the original content is the log again');
    // The next round rotates it.
    await s.clock.advance(10_000);
    await s.manager.rotateAll();
    assert.equal((await names(log)).length, 2);
  });

  it('over rounds keeps maxFiles files: the oldest rotated removed, the kept ones gzipped with their content', async () => {
    const s = setup({ maxSizeBytes: 100, maxFiles: 3 });
    const { id, log } = await running(s, 'a', 'first'.repeat(30));
    const contents = ['first'.repeat(30)];
    await s.manager.rotateContainer(id);
    for (const word of ['second', 'third', 'fourth']) {
      await s.clock.advance(10_000);
      await writeFile(log, word.repeat(30));
      contents.push(word.repeat(30));
      await s.manager.rotateContainer(id);
    }
    const after = await names(log);
    assert.equal(after.length, 3, after.join(' '));
    const [gz, plain] = [after.filter((n) => n.endsWith('.gz')), after.filter((n) => /\.log\.\d{8}-\d{6}$/.test(n))];
    assert.equal(gz.length, 1);
    assert.equal(plain.length, 1);
    assert.equal(gunzipSync(await readFile(path.join(path.dirname(log), gz[0] ?? ''))).toString(), contents[2]);
    assert.equal(await readFile(path.join(path.dirname(log), plain[0] ?? ''), 'utf8'), contents[3]);
    assert.equal(s.runtime.callsTo('reopenContainerLog').length, 4);
  });

  it('reopens a log that is missing (renamed without a reopen) before checking it', async () => {
    const s = setup();
    const { id, log } = await running(s, 'a', '');
    await rm(log);
    assert.equal(await s.manager.rotateContainer(id), 'below-size');
    assert.ok(existsSync(log));
    assert.equal(s.runtime.callsTo('reopenContainerLog').length, 1);
  });

  it("rotates only this node's running containers with logs under the pod log root", async () => {
    const s = setup();
    const mine = await running(s, 'a', big);
    const exited = await running(s, 'b', big);
    s.runtime.setContainerExited(exited.id, 0);
    const other = await running(s, 'c', big, { node: 'node-b' });
    const outsideDir = await mkdtemp(path.join(os.tmpdir(), 'nodelet-logrot-outside-'));
    try {
      const outside = await running(s, 'd', big, { logDirectory: outsideDir });
      await s.manager.rotateAll();
      assert.deepEqual(s.runtime.callsTo('reopenContainerLog').map((c) => c.args[0]), [mine.id]);
      for (const { log } of [exited, other, outside]) assert.deepEqual(await names(log), ['0.log']);
    } finally {
      await rm(outsideDir, { recursive: true, force: true });
    }
  });

  it('runs every 10 s once started, and at once with a new policy', async () => {
    const s = setup({ maxSizeBytes: 1000, maxFiles: 2 });
    const { log } = await running(s, 'a', big);
    s.manager.start();
    await s.clock.advance(10_000);
    assert.equal(s.runtime.callsTo('listContainers').length, 1);
    assert.deepEqual(await names(log), ['0.log']);
    s.manager.setPolicy({ maxSizeBytes: 100, maxFiles: 2 });
    // The round runs on real file I/O, slow on a loaded machine: wait (real time, bounded) for its
    // reopen without moving the clock.
    const deadline = Date.now() + 10_000;
    while (s.runtime.callsTo('reopenContainerLog').length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.equal(s.runtime.callsTo('listContainers').length, 2);
    assert.equal((await names(log)).length, 2);
    await s.manager.stop();
  });
});
