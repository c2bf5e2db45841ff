/**
 * The garbage collector against the recording fake runtime and a real temporary pod log root:
 * what it removes from the runtime and the disk, what it leaves, and what it hands to the reconciler.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { lstat, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { pino } from 'pino';
import { CriError } from '../../cri/errors.js';
import type { PodSandboxConfig } from '../../cri/types.js';
import { ANNOTATION_RESTART_COUNT, containerLabels, sandboxLabels } from '../../reconcilers/model/runtime-labels.js';
import { createFakeClock, type FakeClock } from '../../test/doubles/fake-clock.js';
import { FakeRuntime } from '../../test/doubles/fake-runtime.js';
import type { PodKey } from '../../util/pod-key.js';
import { GcManager, isGcRemovalError, type GcManagerOptions, type ImageGcReason } from './gc-manager.js';
import { gcPolicyOf } from './gc-policy.js';
import { NO_POD_EVENTS, podEventsTo } from '../../test/doubles/pod-events.js';
import { containerLogLinkName } from '../../reconcilers/model/log-link-names.js';

const NODE = 'node-a';
const PAUSE = 'registry.k8s.io/pause:3.10';
const GC_SETTINGS = { maxDeadContainersPerPod: 1, maxDeadContainers: -1, minContainerAgeSeconds: 0, imageHighThresholdPercent: 85, imageLowThresholdPercent: 80, imageMinimumGCAgeSeconds: 0, imageMaximumGCAgeSeconds: 0 };
const POLICY = gcPolicyOf(GC_SETTINGS);
const pod = (uid: string): PodKey => ({ uid, namespace: 'ns', name: `pod-${uid}` });

interface Setup {
  readonly clock: FakeClock;
  readonly runtime: FakeRuntime;
  readonly gc: GcManager;
  readonly present: Set<string>;
  readonly handedOver: PodKey[];
  readonly confirmed: string[];
  /** UIDs the API still has (confirmGone says no). */
  readonly apiHas: Set<string>;
  /** The fake mount table: mount points with their types; `unmount` removes one and records it. */
  readonly mounts: { mountPoint: string; fsType: string }[];
  readonly unmounted: string[];
  /** Log records at info and above. */
  readonly logs: { msg: string; level: number; [field: string]: unknown }[];
  /** Images counted as removed, by reason. */
  readonly imagesRemoved: ImageGcReason[];
  fs: { capacityBytes: number; availableBytes: number };
}

let logRoot = '';
let rootDir = '';
let linkDir = '';
beforeEach(async () => {
  logRoot = await mkdtemp(path.join(os.tmpdir(), 'nodelet-gc-'));
  rootDir = await mkdtemp(path.join(os.tmpdir(), 'nodelet-gc-root-'));
  linkDir = await mkdtemp(path.join(os.tmpdir(), 'nodelet-gc-links-'));
});
afterEach(async () => {
  await rm(logRoot, { recursive: true, force: true });
  await rm(rootDir, { recursive: true, force: true });
  await rm(linkDir, { recursive: true, force: true });
});

function setup(extra: Partial<GcManagerOptions> = {}): Setup {
  const clock = createFakeClock();
  const runtime = new FakeRuntime({ now: () => clock.now(), images: ['busybox:1.35', PAUSE] });
  const present = new Set<string>();
  const handedOver: PodKey[] = [];
  const confirmed: string[] = [];
  const apiHas = new Set<string>();
  const mounts: { mountPoint: string; fsType: string }[] = [];
  const unmounted: string[] = [];
  const logs: Setup['logs'] = [];
  const imagesRemoved: ImageGcReason[] = [];
  const s: Setup = { clock, runtime, present, handedOver, confirmed, apiHas, mounts, unmounted, logs, imagesRemoved, fs: { capacityBytes: 100, availableBytes: 50 }, gc: undefined as unknown as GcManager };
  const gc = new GcManager({
    runtime,
    images: runtime,
    nodeName: NODE,
    podLogDir: logRoot,
    containerLogLinkDir: linkDir,
    rootDir,
    pods: { has: (uid) => present.has(uid), synced: () => true, confirmGone: (key) => { confirmed.push(key.uid); return Promise.resolve(!apiHas.has(key.uid)); } },
    mounts: {
      read: () => Promise.resolve([...mounts]),
      unmount: (point) => {
        unmounted.push(point);
        const i = mounts.findIndex((m) => m.mountPoint === point);
        if (i >= 0) mounts.splice(i, 1);
        return Promise.resolve();
      },
    },
    podEvents: podEventsTo((key) => handedOver.push(key)),
    sandboxImage: PAUSE,
    policy: POLICY,
    clock,
    logger: pino({ level: 'info' }, { write: (line: string) => { logs.push(JSON.parse(line) as Setup['logs'][number]); } }),
    fsStats: (mountpoint) => {
      assert.equal(mountpoint, runtime.imageFsMountpoint);
      return Promise.resolve(s.fs);
    },
    metrics: { imageRemoved: (reason) => imagesRemoved.push(reason) },
    ...extra,
  });
  return Object.assign(s, { gc });
}

function sandboxConfig(key: PodKey, attempt: number): PodSandboxConfig {
  return { metadata: { ...key, attempt }, hostname: key.name, logDirectory: path.join(logRoot, `${key.namespace}_${key.name}_${key.uid}`), labels: sandboxLabels(key, NODE), annotations: {} };
}

/** Runs `count` instances of container `main` in a new sandbox, one second apart; all exit but the last when `lastRuns`. Each writes its log file. */
async function crashLoop(s: Setup, key: PodKey, count: number, o: { lastRuns?: boolean; attempt?: number } = {}): Promise<{ sandboxId: string; ids: string[] }> {
  const { lastRuns = true, attempt = 0 } = o;
  const config = sandboxConfig(key, attempt);
  const sandboxId = await s.runtime.runPodSandbox(config);
  const ids: string[] = [];
  for (let n = 0; n < count; n++) {
    await s.clock.advance(1000);
    const id = await s.runtime.createContainer(sandboxId, {
      metadata: { name: 'main', attempt: n },
      image: { image: 'busybox:1.35' },
      command: [], args: [], workingDir: '', envs: [], mounts: [],
      labels: containerLabels(key, 'main', NODE),
      annotations: { [ANNOTATION_RESTART_COUNT]: String(n) },
      logPath: `main/${n}.log`,
      stdin: false, stdinOnce: false, tty: false,
    }, config);
    await s.runtime.startContainer(id);
    await mkdir(path.join(config.logDirectory, 'main'), { recursive: true });
    await writeFile(path.join(config.logDirectory, 'main', `${n}.log`), 'log\n');
    await writeFile(path.join(config.logDirectory, 'main', `${n}.log.20300101-000000`), 'rotated\n');
    if (n < count - 1 || !lastRuns) s.runtime.setContainerExited(id, 1);
    ids.push(id);
  }
  return { sandboxId, ids };
}

const logOf = (key: PodKey, n: number): string => path.join(logRoot, `${key.namespace}_${key.name}_${key.uid}`, 'main', `${n}.log`);

describe('GcManager: containers', () => {
  it('keeps the newest exited instance beside the running one, removes the older ones and their log files (rotations too)', async () => {
    const s = setup();
    s.present.add('a');
    const { ids } = await crashLoop(s, pod('a'), 5);
    await s.gc.collectContainers();
    assert.deepEqual(s.runtime.callsTo('removeContainer').map((c) => c.args[0]), ids.slice(0, 3));
    const left = await s.runtime.listContainers();
    assert.deepEqual(left.map((c) => [c.id, c.state]).sort(), [[ids[3], 'CONTAINER_EXITED'], [ids[4], 'CONTAINER_RUNNING']].sort());
    for (const n of [0, 1, 2]) {
      assert.equal(existsSync(logOf(pod('a'), n)), false, `log ${n} removed`);
      assert.equal(existsSync(`${logOf(pod('a'), n)}.20300101-000000`), false, `rotated log ${n} removed`);
    }
    for (const n of [3, 4]) assert.equal(existsSync(logOf(pod('a'), n)), true, `log ${n} kept`);
    // A second pass finds nothing more to do.
    await s.gc.collectContainers();
    assert.equal(s.runtime.callsTo('removeContainer').length, 3);
  });

  it('hands a pod gone from every source to the reconciler and removes nothing of it itself', async () => {
    const s = setup();
    await crashLoop(s, pod('gone'), 3, { lastRuns: false });
    await s.gc.collectContainers();
    assert.equal(s.runtime.callsTo('removeContainer').length, 0);
    assert.equal(s.runtime.callsTo('removePodSandbox').length, 0);
    assert.deepEqual(s.handedOver, [pod('gone')]);
    // Its logs stay while the runtime still has it.
    assert.equal(existsSync(logOf(pod('gone'), 0)), true);
  });

  it('removes an older not-ready sandbox once none of its containers is left, and keeps the newest', async () => {
    const s = setup();
    s.present.add('a');
    const first = await crashLoop(s, pod('a'), 2, { lastRuns: false, attempt: 0 });
    await s.runtime.stopPodSandbox(first.sandboxId);
    const second = await crashLoop(s, pod('a'), 1, { lastRuns: false, attempt: 1 });
    await s.gc.collectContainers();
    // Both of the first sandbox's instances are older than the second sandbox's one: they go, then the sandbox.
    assert.deepEqual(s.runtime.callsTo('removeContainer').map((c) => c.args[0]).sort(), [...first.ids].sort());
    assert.deepEqual(s.runtime.callsTo('removePodSandbox').map((c) => c.args[0]), [first.sandboxId]);
    assert.deepEqual((await s.runtime.listPodSandbox()).map((sb) => sb.id), [second.sandboxId]);
  });

  it('removes the log directory of a pod that exists nowhere once the API confirms it, and no other', async () => {
    const s = setup();
    s.present.add('a');
    await crashLoop(s, pod('a'), 1);
    await crashLoop(s, pod('being-torn-down'), 1);
    const orphanDir = path.join(logRoot, 'ns_pod-orphan_orphan');
    await mkdir(path.join(orphanDir, 'main'), { recursive: true });
    await writeFile(path.join(orphanDir, 'main', '0.log'), 'old\n');
    await writeFile(path.join(logRoot, 'not-a-pod-dir'), '');
    await s.gc.collectContainers();
    assert.equal(existsSync(orphanDir), false);
    assert.deepEqual(s.confirmed, ['orphan']);
    assert.equal(existsSync(logOf(pod('a'), 0)), true);
    assert.equal(existsSync(logOf(pod('being-torn-down'), 0)), true);
    assert.equal(existsSync(path.join(logRoot, 'not-a-pod-dir')), true);
  });

  it('hands the pod cgroups\' orphan pass the pods with a running container or a ready sandbox, and fails the run on its failures', async () => {
    const passes: string[][] = [];
    const s = setup({ podCgroups: { removeOrphansExcept: (running) => { passes.push([...running].sort()); return Promise.resolve({ removed: 1, failed: 1 }); } } });
    s.present.add('run');
    await crashLoop(s, pod('run'), 1);
    const stopped = await crashLoop(s, pod('stopped'), 1, { lastRuns: false });
    await s.runtime.stopPodSandbox(stopped.sandboxId);
    await assert.rejects(s.gc.collectContainers(), (e: unknown) => isGcRemovalError(e) && e.failures === 1);
    assert.deepEqual(passes, [['run']]);
  });

  it('goes on past a failed removal and then fails the run, so the loop retries', async () => {
    const s = setup();
    s.present.add('a');
    const { ids } = await crashLoop(s, pod('a'), 4);
    s.runtime.injectError('removeContainer', new CriError({ method: 'RemoveContainer', code: GrpcStatus.UNAVAILABLE, message: 'unavailable' }));
    await assert.rejects(s.gc.collectContainers(), (e: unknown) => isGcRemovalError(e) && e.failures === 1);
    assert.deepEqual((await s.runtime.listContainers()).map((c) => c.id).sort(), [ids[0], ids[2], ids[3]].sort());
    await s.gc.collectContainers();
    assert.deepEqual((await s.runtime.listContainers()).map((c) => c.id).sort(), [ids[2], ids[3]].sort());
  });

  it('runs every minute once started, and at once when the policy changes', async () => {
    const s = setup();
    s.present.add('a');
    await crashLoop(s, pod('a'), 3);
    s.gc.start();
    await s.clock.advance(59_000);
    assert.equal(s.runtime.callsTo('removeContainer').length, 0);
    await s.clock.advance(1_000);
    assert.equal(s.runtime.callsTo('removeContainer').length, 1);
    await s.runtime.startContainer(await newInstance(s));
    s.gc.setPolicy(gcPolicyOf({ ...GC_SETTINGS, minContainerAgeSeconds: 3600 }));
    await s.clock.advance(0);
    // The run happened with the new policy: nothing is an hour old, nothing more went.
    assert.ok(s.runtime.callsTo('listContainers').length >= 2);
    assert.equal(s.runtime.callsTo('removeContainer').length, 1);
    await s.gc.stop();
  });
});

/** Exits the running `main` of pod a and creates the next instance. */
async function newInstance(s: Setup): Promise<string> {
  const running = (await s.runtime.listContainers()).find((c) => c.state === 'CONTAINER_RUNNING');
  assert.ok(running);
  s.runtime.setContainerExited(running.id, 1);
  const sandbox = s.runtime.getSandbox(running.podSandboxId);
  assert.ok(sandbox);
  const attempt = running.metadata.attempt + 1;
  return s.runtime.createContainer(running.podSandboxId, {
    metadata: { name: 'main', attempt }, image: { image: 'busybox:1.35' }, command: [], args: [], workingDir: '', envs: [], mounts: [],
    labels: containerLabels(pod('a'), 'main', NODE), annotations: { [ANNOTATION_RESTART_COUNT]: String(attempt) }, logPath: `main/${attempt}.log`, stdin: false, stdinOnce: false, tty: false,
  }, sandbox.config);
}

/** Creates `<rootDir>/pods/<uid>/volumes/kubernetes.io~<plugin>/x/file`; returns the pod directory. */
async function podDirWith(uid: string, plugin = 'empty-dir'): Promise<string> {
  const dir = path.join(rootDir, 'pods', uid);
  await mkdir(path.join(dir, 'volumes', `kubernetes.io~${plugin}`, 'x'), { recursive: true });
  await writeFile(path.join(dir, 'volumes', `kubernetes.io~${plugin}`, 'x', 'file'), 'data\n');
  return dir;
}

describe('GcManager: container log links', () => {
  /** The link the agent made when container `id` of `key` started (its `main`, instance `n`). */
  async function linkOf(key: PodKey, id: string, n: number): Promise<string> {
    const link = path.join(linkDir, containerLogLinkName({ podName: key.name, podNamespace: key.namespace, containerName: 'main', containerId: id }));
    await symlink(logOf(key, n), link);
    return link;
  }
  const isThere = (file: string): Promise<boolean> => lstat(file).then(() => true, () => false);

  it('removes the link of each dead container it removes, with the container, and no other', async () => {
    const s = setup();
    s.present.add('a');
    const { ids } = await crashLoop(s, pod('a'), 4);
    const links = await Promise.all(ids.map((id, n) => linkOf(pod('a'), id, n)));
    await s.gc.collectContainers();
    assert.deepEqual(s.runtime.callsTo('removeContainer').map((c) => c.args[0]), ids.slice(0, 2));
    assert.deepEqual(await Promise.all(links.map(isThere)), [false, false, true, true]);
    const removed = s.logs.filter((l) => l.msg === 'removed dead container');
    assert.deepEqual(removed.map((l) => l.logLink), [true, true]);
  });

  it("removes dangling links into its pod log directory whose containers are gone or exited; keeps a running container's, another agent's, and every link that resolves", async () => {
    const s = setup();
    s.present.add('a');
    const { ids } = await crashLoop(s, pod('a'), 2);
    const running = await linkOf(pod('a'), ids[1]!, 1);
    const exited = await linkOf(pod('a'), ids[0]!, 0);
    // The exited container's log is gone (as after a crash mid-removal); the running one's is mid-rotation.
    await rm(logOf(pod('a'), 0));
    await rm(logOf(pod('a'), 1));
    const gone = path.join(linkDir, `pod-x_ns_main-${'d'.repeat(64)}.log`);
    await symlink(path.join(logRoot, 'ns_pod-x_x', 'main', '0.log'), gone);
    const kubelets = path.join(linkDir, `web_default_nginx-${'e'.repeat(64)}.log`);
    await symlink('/srv/kubelet/pod-logs/default_web_u/nginx/0.log', kubelets);
    await writeFile(path.join(logRoot, 'elsewhere.log'), 'x\n');
    const resolving = path.join(linkDir, `pod-y_ns_main-${'f'.repeat(64)}.log`);
    await symlink(path.join(logRoot, 'elsewhere.log'), resolving);
    await writeFile(path.join(linkDir, 'notes.txt'), 'not a link\n');
    await s.gc.collectContainers();
    assert.equal(s.runtime.callsTo('removeContainer').length, 0, 'no container is removed: the links go by themselves');
    assert.deepEqual((await readdir(linkDir)).sort(), [path.basename(kubelets), path.basename(running), path.basename(resolving), 'notes.txt'].sort());
    assert.equal(await isThere(exited), false);
    assert.deepEqual(s.logs.filter((l) => l.msg === 'removed dangling container log link').map((l) => [l.link, l.reason]).sort(), [
      [path.basename(exited), 'container-exited'],
      [path.basename(gone), 'container-gone'],
    ].sort());
  });
});

describe('GcManager: orphaned pod directories', () => {
  it('removes the directory of a pod no source, runtime or API has, logging it and the count; never a live, running or still-known pod’s', async () => {
    const s = setup();
    s.present.add('live');
    s.apiHas.add('lagging');
    await crashLoop(s, pod('running'), 1);
    const orphan = await podDirWith('orphan');
    const named = await podDirWith('named');
    const kept = [await podDirWith('live'), await podDirWith('running'), await podDirWith('lagging')];
    await mkdir(path.join(logRoot, 'ns_web_named'));
    await s.gc.collectContainers();
    assert.equal(existsSync(orphan), false, 'orphan removed');
    assert.equal(existsSync(named), false, 'orphan with a log directory removed');
    for (const dir of kept) assert.equal(existsSync(path.join(dir, 'volumes', 'kubernetes.io~empty-dir', 'x', 'file')), true, `${dir} kept`);
    // The API was asked about each candidate: by name when the log directory names it, else by UID alone.
    assert.deepEqual(s.confirmed.filter((uid) => uid !== 'named').sort(), ['lagging', 'orphan']);
    const removals = s.logs.filter((l) => l.msg === 'removed the orphaned directory of a pod that no longer exists');
    assert.deepEqual(removals.map((l) => l.podUid).sort(), ['named', 'orphan']);
    assert.deepEqual(s.logs.filter((l) => l.msg === 'orphaned pod directories').map((l) => [l.removed, l.kept, l.failed]), [[2, 0, 0]]);
  });

  it('asks the API by name when the pod’s log directory names it, by UID alone otherwise', async () => {
    const keys: PodKey[] = [];
    const s = setup();
    await podDirWith('named');
    await podDirWith('bare');
    await mkdir(path.join(logRoot, 'ns_web_named'));
    const gc = new GcManager({ runtime: s.runtime, images: s.runtime, nodeName: NODE, podLogDir: logRoot, containerLogLinkDir: linkDir, rootDir, pods: { has: () => false, synced: () => true, confirmGone: (key) => { keys.push(key); return Promise.resolve(false); } }, podEvents: NO_POD_EVENTS, sandboxImage: PAUSE, policy: POLICY, clock: s.clock, logger: pino({ level: 'silent' }), mounts: { read: () => Promise.resolve([]), unmount: () => Promise.resolve() } });
    await gc.collectContainers();
    // (The log directory GC asks about `named` by the same key.)
    const asked = [...new Set(keys.map((k) => `${k.uid} ${k.namespace}/${k.name}`))].sort();
    assert.deepEqual(asked, ['bare /', 'named ns/web']);
    assert.equal(existsSync(path.join(rootDir, 'pods', 'bare')), true, 'not confirmed gone: kept');
  });

  it('unmounts nodelet’s own tmpfs first; keeps an orphan with another mount or another tool’s volume directory, logging an error', async () => {
    const s = setup();
    const memory = await podDirWith('memory');
    const bound = await podDirWith('bound');
    const csi = await podDirWith('csi', 'csi');
    s.mounts.push({ mountPoint: path.join(memory, 'volumes', 'kubernetes.io~empty-dir', 'x'), fsType: 'tmpfs' });
    s.mounts.push({ mountPoint: path.join(bound, 'volumes', 'kubernetes.io~empty-dir', 'x'), fsType: 'ext4' });
    await s.gc.collectContainers();
    assert.deepEqual(s.unmounted, [path.join(memory, 'volumes', 'kubernetes.io~empty-dir', 'x')]);
    assert.equal(existsSync(memory), false);
    assert.equal(existsSync(path.join(bound, 'volumes', 'kubernetes.io~empty-dir', 'x', 'file')), true);
    assert.equal(existsSync(path.join(csi, 'volumes', 'kubernetes.io~csi', 'x', 'file')), true);
    assert.deepEqual(s.logs.filter((l) => l.msg === 'orphaned pod directory kept' && l.level === 50).map((l) => l.podUid).sort(), ['bound', 'csi']);
    assert.deepEqual(s.logs.filter((l) => l.msg === 'orphaned pod directories').map((l) => [l.removed, l.kept, l.failed]), [[1, 2, 0]]);
  });

  it('never removes across a mount that an unmount left in place: the run fails and the directory stays', async () => {
    const s = setup();
    const memory = await podDirWith('memory');
    const point = path.join(memory, 'volumes', 'kubernetes.io~empty-dir', 'x');
    // Stacked twice: one unmount leaves the other.
    s.mounts.push({ mountPoint: point, fsType: 'tmpfs' }, { mountPoint: point, fsType: 'tmpfs' });
    await assert.rejects(s.gc.collectContainers(), (e: unknown) => isGcRemovalError(e) && e.failures === 1);
    assert.equal(existsSync(path.join(point, 'file')), true);
  });
});

/** Adds image `ref` and a container of another runtime user (no nodelet labels) that uses it; returns the container's ID. */
async function otherUserOf(s: Setup, ref: string): Promise<string> {
  s.runtime.addSizedImage(ref, 40n);
  const config: PodSandboxConfig = { metadata: { name: 'x', uid: 'x', namespace: 'other', attempt: 0 }, hostname: 'x', logDirectory: '', labels: {}, annotations: {} };
  const spec = { metadata: { name: 'x', attempt: 0 }, image: { image: ref }, command: [], args: [], workingDir: '', envs: [], mounts: [], labels: {}, annotations: {}, logPath: '', stdin: false, stdinOnce: false, tty: false };
  return s.runtime.createContainer(await s.runtime.runPodSandbox(config), spec, config);
}

describe('GcManager: images', () => {
  it('below the high threshold removes nothing', async () => {
    const s = setup();
    s.runtime.addSizedImage('example.test/unused:1', 10n);
    s.fs = { capacityBytes: 100, availableBytes: 16 };
    await s.gc.collectImages();
    assert.equal(s.runtime.callsTo('removeImage').length, 0);
  });

  it('at the high threshold removes unused images least recently used first until the low one, never the used, pinned or sandbox image', async () => {
    const s = setup();
    s.present.add('a');
    await crashLoop(s, pod('a'), 1, { lastRuns: false });
    const first = s.runtime.addSizedImage('example.test/first-seen:1', 6n);
    await s.gc.collectContainers(); // first-seen is first seen now
    await s.clock.advance(10_000);
    const second = s.runtime.addSizedImage('example.test/second-seen:1', 6n);
    s.runtime.addSizedImage('example.test/third-seen:1', 6n);
    await s.gc.collectContainers();
    await s.clock.advance(10_000);
    s.runtime.addSizedImage('example.test/pinned:1', 50n, true);
    // 90 % used: 10 bytes to free to reach 80 %.
    s.fs = { capacityBytes: 100, availableBytes: 10 };
    await s.gc.collectImages();
    assert.deepEqual(s.runtime.callsTo('removeImage').map((c) => c.args[0]), [{ image: first.id }, { image: second.id }]);
    assert.deepEqual(s.imagesRemoved, ['space', 'space']);
    assert.deepEqual(s.logs.filter((l) => l.msg === 'image GC: removed unused image').map((l) => [l.imageId, l.reason]), [[first.id, 'space'], [second.id, 'space']]);
    const left = (await s.runtime.listImages()).flatMap((i) => i.repoTags).sort();
    assert.deepEqual(left, ['docker.io/library/busybox:1.35', 'example.test/pinned:1', 'example.test/third-seen:1', PAUSE]);
  });

  it('counts an image used by any container of the runtime, nodelet’s or not, as in use', async () => {
    const s = setup();
    const other = s.runtime.addSizedImage('example.test/someone-elses:1', 50n);
    const config: PodSandboxConfig = { metadata: { name: 'x', uid: 'x', namespace: 'other', attempt: 0 }, hostname: 'x', logDirectory: '', labels: {}, annotations: {} };
    const sandboxId = await s.runtime.runPodSandbox(config);
    await s.runtime.createContainer(sandboxId, { metadata: { name: 'x', attempt: 0 }, image: { image: 'example.test/someone-elses:1' }, command: [], args: [], workingDir: '', envs: [], mounts: [], labels: {}, annotations: {}, logPath: '', stdin: false, stdinOnce: false, tty: false }, config);
    const busybox = await s.runtime.imageStatus({ image: 'busybox:1.35' });
    s.fs = { capacityBytes: 100, availableBytes: 0 };
    await s.gc.collectImages();
    // Only busybox (used by nothing here) goes; the pause image and the other user's image stay.
    assert.deepEqual(s.runtime.callsTo('removeImage').map((c) => c.args[0]), [{ image: busybox?.id }]);
    assert.ok((await s.runtime.listImages()).some((i) => i.id === other.id));
  });

  it('measures the disk after the age removals, as the kubelet: what they freed is not freed again', async () => {
    // Full until an image goes.
    const full = { capacityBytes: 100, availableBytes: 10 };
    const s = setup({ policy: gcPolicyOf({ ...GC_SETTINGS, imageMaximumGCAgeSeconds: 600 }), fsStats: () => Promise.resolve(s.runtime.callsTo('removeImage').length === 0 ? full : { capacityBytes: 100, availableBytes: 50 }) });
    s.present.add('a');
    await crashLoop(s, pod('a'), 1);
    const never = s.runtime.addSizedImage('example.test/never-used:1', 40n);
    const user = await otherUserOf(s, 'example.test/recently-used:1');
    await s.clock.advance(700_000);
    await s.gc.collectContainers(); // recently-used is last seen in use now
    await s.runtime.removeContainer(user);
    await s.gc.collectImages();
    // recently-used would be the space pass's first candidate had the disk been measured before.
    assert.deepEqual(s.runtime.callsTo('removeImage').map((c) => c.args[0]), [{ image: never.id }]);
    assert.deepEqual(s.imagesRemoved, ['age']);
  });

  it('an image unused for longer than the maximum age goes at the first pass after the manager has run that long, with its reason', async () => {
    const MAX_AGE_S = 600;
    const s = setup({ policy: gcPolicyOf({ ...GC_SETTINGS, imageMaximumGCAgeSeconds: MAX_AGE_S }) });
    s.present.add('a');
    await crashLoop(s, pod('a'), 1);
    const never = s.runtime.addSizedImage('example.test/never-used:1', 40n);
    const user = await otherUserOf(s, 'example.test/recently-used:1');
    await s.clock.advance(500_000);
    await s.gc.collectContainers(); // recently-used is last seen in use now
    await s.runtime.removeContainer(user);
    await s.gc.collectImages();
    assert.equal(s.runtime.callsTo('removeImage').length, 0, 'run 501 s, under the maximum age: nothing goes for age');
    await s.clock.advance(200_000);
    // Below the high threshold (50 %): only age removes.
    await s.gc.collectImages();
    assert.deepEqual(s.runtime.callsTo('removeImage').map((c) => c.args[0]), [{ image: never.id }]);
    assert.deepEqual(s.imagesRemoved, ['age']);
    const logged = s.logs.filter((l) => l.msg === 'image GC: removed image unused for longer than the maximum age');
    assert.deepEqual(logged.map((l) => [l.imageId, l.reason, l.lastUsed, l.maxAgeSeconds]), [[never.id, 'age', 'never', MAX_AGE_S]]);
    // recently-used (unused for 200 s), busybox (in use) and the sandbox image stay.
    assert.deepEqual((await s.runtime.listImages()).flatMap((i) => i.repoTags).sort(), ['docker.io/library/busybox:1.35', 'example.test/recently-used:1', PAUSE]);
    await s.clock.advance(401_000);
    await s.gc.collectImages();
    assert.deepEqual(s.imagesRemoved, ['age', 'age'], 'recently-used, now unused for 601 s, goes too');
  });
});
