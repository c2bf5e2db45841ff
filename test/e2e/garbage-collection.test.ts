/**
 * End to end: garbage collection on the test cluster (controllers/gc), asserted in the runtime
 * (crictl), on disk (the pod log directory) and in the API.
 *
 * - A crash-looping pod keeps exactly one exited instance of its container besides the current
 *   one (the kubelet's MaxPerPodContainer 1; container GC runs every minute), the logs of the
 *   removed instances are gone, and the API's restartCount still matches the newest instance.
 * - A deleted pod leaves nothing in the runtime, and its log directory goes at the next pass.
 * - Image GC removes an unused image once the NodeAgent's thresholds put the image filesystem
 *   over the high one, and leaves an image in use (busybox) and the pause image alone.
 * - With `imageMaximumGCAgeSeconds` set and disk-based image GC off (high threshold 100), an image
 *   no container has used goes at once (the agent has run longer than the age), the same images
 *   staying.
 * - The node-wide limit (`maxDeadContainers` 2, 5 allowed per pod container): two crash-looping
 *   containers of one pod keep one exited instance each.
 * - Orphaned pod directories (`<root-dir>/pods/<uid>` of no pod), one with a tmpfs mounted at its
 *   emptyDir as a memory-backed emptyDir leaves it, go at the next container GC pass (unmounted
 *   first); a running pod's directory, with its own memory emptyDir, stays.
 *
 * The containerd image store is shared with every other test, and image GC removes unused images
 * least recently used first. So that only the image this test imports can go, every other image
 * no container uses is held in use for the duration by a created (never started) container in a
 * host-network sandbox made with crictl (nodelet never touches what it did not create), and the
 * NodeAgent's GC settings are reset before that holder is removed.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, statfs, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import {
  NODE_NAME,
  apply,
  busyboxPod,
  containerStatusOf,
  createNamespace,
  crictl,
  deleteNamespace,
  eventually,
  getPod,
  hostMountsUnder,
  kubectl,
  podWithRuntime,
  requireCluster,
  runtimeContainers,
  runtimeSandboxes,
  uniqueName,
  waitForPhase,
} from './helpers.js';

const run = promisify(execFile);
const POD_LOG_DIR = '/var/log/pods';
const PAUSE = 'registry.k8s.io/pause:3.10';
/** The agent's `--root-dir` (test/cluster/lib/agent.sh). */
const AGENT_ROOT = path.join(process.env.CLUSTER_DIR ?? '', 'nodelet-root');

async function patchGc(gc: Record<string, number> | null): Promise<void> {
  await kubectl(['patch', 'nodeagent', NODE_NAME, '--type', 'merge', '-p', JSON.stringify({ spec: { gc } })]);
}

interface CrictlImage {
  id: string;
  repoTags?: string[] | null;
  repoDigests?: string[] | null;
}

async function runtimeImages(): Promise<CrictlImage[]> {
  return (JSON.parse(await crictl(['images', '-o', 'json'])) as { images: CrictlImage[] | null }).images ?? [];
}

/** Image references every container of the runtime (any owner, any state) uses. */
async function imagesInUse(): Promise<Set<string>> {
  const listed = JSON.parse(await crictl(['ps', '-a', '-o', 'json'])) as { containers: { imageRef?: string; image?: { image?: string } }[] | null };
  return new Set((listed.containers ?? []).flatMap((c) => [c.imageRef ?? '', c.image?.image ?? '']).filter((r) => r !== ''));
}

function namesOf(image: CrictlImage): string[] {
  return [...(image.repoTags ?? []), ...(image.repoDigests ?? [])];
}

function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Writes a blob into an OCI layout; returns its descriptor fields. */
async function putBlob(layout: string, data: Buffer): Promise<{ digest: string; size: number }> {
  const hex = sha256(data);
  await writeFile(path.join(layout, 'blobs', 'sha256', hex), data);
  return { digest: `sha256:${hex}`, size: data.length };
}

/** Builds a one-layer image of 256 KiB of random bytes named `ref` and imports it with ctr. */
async function importThrowawayImage(ref: string, dir: string): Promise<void> {
  const rootfs = path.join(dir, 'rootfs');
  const layout = path.join(dir, 'layout');
  await mkdir(rootfs, { recursive: true });
  await mkdir(path.join(layout, 'blobs', 'sha256'), { recursive: true });
  await writeFile(path.join(rootfs, 'junk'), randomBytes(256 * 1024));
  await run('tar', ['--sort=name', '--mtime=@0', '--owner=0', '--group=0', '--numeric-owner', '-C', rootfs, '-cf', path.join(dir, 'layer.tar'), '.']);
  const layerTar = await readFile(path.join(dir, 'layer.tar'));
  const layer = await putBlob(layout, layerTar);
  const arch = process.arch === 'arm64' ? 'arm64' : 'amd64';
  const config = await putBlob(layout, Buffer.from(JSON.stringify({ architecture: arch, os: 'linux', config: { Cmd: ['/junk'] }, rootfs: { type: 'layers', diff_ids: [layer.digest] } })));
  const manifest = await putBlob(layout, Buffer.from(JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
    layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...layer }],
  })));
  const index = {
    schemaVersion: 2,
    manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', ...manifest, platform: { architecture: arch, os: 'linux' }, annotations: { 'io.containerd.image.name': ref, 'org.opencontainers.image.ref.name': ref } }],
  };
  await writeFile(path.join(layout, 'index.json'), JSON.stringify(index));
  await writeFile(path.join(layout, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}');
  await run('tar', ['-C', layout, '-cf', path.join(dir, 'image.tar'), '.']);
  await run('ctr', ['images', 'import', path.join(dir, 'image.tar')], { timeout: 60_000 });
}

/** The throwaway image `ref` imported, and every other image no container uses held in use; `release` undoes the hold (after resetting the GC settings). */
async function throwawayAmongHeldImages(ref: string, dir: string): Promise<{ throwaway: CrictlImage; before: CrictlImage[]; release: () => Promise<void> }> {
  await importThrowawayImage(ref, path.join(dir, 'throwaway'));
  const throwaway = await eventually(`${ref} in the CRI image list`, async () => (await runtimeImages()).find((i) => namesOf(i).some((n) => n.endsWith(ref))));
  const inUse = await imagesInUse();
  const before = await runtimeImages();
  const toHold = before.filter((i) => i.id !== throwaway.id && !inUse.has(i.id) && !namesOf(i).some((n) => inUse.has(n) || n === PAUSE));
  const holder = await holdImages(toHold.map((i) => i.id), dir);
  console.log(`${before.length} images, ${toHold.length} held in use for the test`);
  return { throwaway, before, release: async () => { await crictl(['rmp', '-f', holder]); } };
}

/** A host-network sandbox made with crictl holding one created container per image in `images`. */
async function holdImages(images: readonly string[], dir: string): Promise<string> {
  const podConfig = path.join(dir, 'holder-pod.json');
  await writeFile(podConfig, JSON.stringify({
    metadata: { name: 'gc-e2e-holder', namespace: 'gc-e2e', uid: uniqueName('gc-e2e-holder'), attempt: 0 },
    log_directory: path.join(dir, 'holder-logs'),
    linux: { security_context: { namespace_options: { network: 2 } } },
  }));
  const podId = (await crictl(['runp', podConfig])).trim();
  for (const [i, image] of images.entries()) {
    const containerConfig = path.join(dir, `holder-${i}.json`);
    await writeFile(containerConfig, JSON.stringify({ metadata: { name: `hold-${i}` }, image: { image }, command: ['/gc-e2e-never-started'], log_path: `hold-${i}.log` }));
    await crictl(['create', '--no-pull', podId, containerConfig, podConfig]);
  }
  return podId;
}

/** Two orphaned pod directories under the agent's root: a plain one, and one whose memory emptyDir is still mounted. */
interface Orphans {
  readonly plain: string;
  readonly mounted: string;
  readonly tmpfsAt: string;
  /** When they were made (ms since the epoch). */
  readonly createdMs: number;
}

/** Makes the orphans of the pod-directory test (no pod of the API owns their UIDs). */
async function plantOrphans(): Promise<Orphans> {
  const plain = path.join(AGENT_ROOT, 'pods', randomUUID());
  const mounted = path.join(AGENT_ROOT, 'pods', randomUUID());
  const tmpfsAt = path.join(mounted, 'volumes', 'kubernetes.io~empty-dir', 'cache');
  for (const dir of [plain, mounted]) await mkdir(path.join(dir, 'volumes', 'kubernetes.io~empty-dir', 'x'), { recursive: true });
  await writeFile(path.join(plain, 'volumes', 'kubernetes.io~empty-dir', 'x', 'file'), 'orphaned\n');
  await mkdir(tmpfsAt);
  await run('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', tmpfsAt]);
  await writeFile(path.join(tmpfsAt, 'file'), 'in memory\n');
  return { plain, mounted, tmpfsAt, createdMs: Date.now() };
}

/** The keeper of the pod-directory test: a running pod with a memory and a disk emptyDir, both written. */
function dirKeeperPod(namespace: string): object {
  const keeper = busyboxPod({ name: 'dir-keeper', namespace, script: 'echo kept > /cache/file; echo kept > /scratch/file; sleep 3600' }) as { spec: { containers: { volumeMounts?: object[] }[]; volumes?: object[] } };
  keeper.spec.volumes = [{ name: 'cache', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } }, { name: 'scratch', emptyDir: {} }];
  keeper.spec.containers[0]!.volumeMounts = [{ name: 'cache', mountPath: '/cache' }, { name: 'scratch', mountPath: '/scratch' }];
  return keeper;
}

describe('garbage collection', { timeout: 20 * 60_000 }, () => {
  let ns = '';
  const tmp: string[] = [];
  let orphans: Orphans | undefined;

  // The orphaned pod directories and their running neighbour are made first: container GC runs
  // every 60 s, so its pass lands while the crash loop test waits, not in a wait of its own.
  before(async () => {
    requireCluster();
    ns = await createNamespace('e2e-gc');
    await apply(dirKeeperPod(ns));
    orphans = await plantOrphans();
  });

  after(async () => {
    if (orphans !== undefined && (await hostMountsUnder(orphans.mounted)).length > 0) await run('umount', [orphans.tmpfsAt]);
    if (ns !== '') await deleteNamespace(ns);
    for (const dir of tmp) await rm(dir, { recursive: true, force: true });
  });

  it('keeps one exited instance of a crash-looping container besides the current one, with its log; restartCount stays right', async () => {
    await apply(busyboxPod({ name: 'crasher', namespace: ns, script: 'echo run; exit 1', restartPolicy: 'Always' }));
    const started = Date.now();
    // Four instances at least (restartCount ≥ 3), and container GC has run since: one exited instance left.
    const settled = await podWithRuntime([ns, 'crasher'], { name: 'main' }, (p) => (containerStatusOf(p, 'main')?.restartCount ?? 0) >= 3);
    const { pod } = await eventually('container GC to leave one exited instance', async () => {
      const s = await podWithRuntime([ns, 'crasher'], { name: 'main' }, (p) => (containerStatusOf(p, 'main')?.restartCount ?? 0) >= 3);
      return s.picture.containers.filter((c) => c.includes(':EXITED')).length === 1 ? s : undefined;
    }, 150_000);
    const uid = pod.metadata?.uid ?? '';
    const status = containerStatusOf(pod, 'main');
    const restartCount = status?.restartCount ?? -1;
    const instances = await runtimeContainers(uid);
    const exited = instances.filter((c) => c.state === 'CONTAINER_EXITED');
    const running = instances.filter((c) => c.state === 'CONTAINER_RUNNING');
    console.log(`crash loop after ${Math.round((Date.now() - started) / 1000)} s: restartCount ${restartCount} (${restartCount + 1} instances created), in crictl: ${exited.length} exited + ${running.length} running (first settled picture: ${settled.picture.containers.join(', ')})`);
    assert.ok(restartCount >= 3);
    assert.equal(exited.length, 1, 'exactly one exited instance');
    assert.ok(running.length <= 1);
    assert.equal(instances.length, exited.length + running.length, 'nothing but exited and running instances');
    const newest = instances.at(-1);
    assert.ok(newest !== undefined);
    // The newest instance is the one the status counts; the exited one kept is the newest exited.
    assert.equal(newest.attempt, restartCount);
    assert.equal(exited[0]?.attempt, running.length === 1 ? restartCount - 1 : restartCount);
    if (running.length === 1) assert.equal(status?.lastState?.terminated?.containerID?.replace(/^[a-z]+:\/\//, ''), exited[0]?.id);
    // Only the kept instances' logs are left.
    const logs = (await readdir(path.join(POD_LOG_DIR, `${ns}_crasher_${uid}`, 'main'))).sort();
    console.log(`log files of main: ${logs.join(', ')}`);
    assert.deepEqual(logs, instances.map((c) => `${c.attempt}.log`).sort());
    assert.equal((await runtimeSandboxes(uid)).length, 1);
    // The next restart counts on from the kept instance: restartCount + 1, as its new instance's attempt.
    const next = await podWithRuntime([ns, 'crasher'], { name: 'main' }, (p) => containerStatusOf(p, 'main')?.restartCount === restartCount + 1);
    const instancesNow = await runtimeContainers(uid);
    console.log(`next restart: restartCount ${containerStatusOf(next.pod, 'main')?.restartCount}, instances ${next.picture.containers.join(', ')}`);
    assert.equal(instancesNow.at(-1)?.attempt, restartCount + 1);
    assert.ok(instancesNow.filter((c) => c.state === 'CONTAINER_EXITED').length <= 2, 'at most the kept instance and the new one (if it exited already) before the next pass');
  });

  it('leaves nothing of a deleted pod in the runtime, and removes its log directory', async () => {
    const pod = await getPod(ns, 'crasher');
    const uid = pod?.metadata?.uid ?? '';
    assert.notEqual(uid, '');
    const logDir = path.join(POD_LOG_DIR, `${ns}_crasher_${uid}`);
    assert.ok(existsSync(logDir));
    const deleted = Date.now();
    await kubectl(['delete', 'pod', '-n', ns, 'crasher', '--wait=true', '--timeout=60s']);
    const [sandboxes, containers] = await Promise.all([runtimeSandboxes(uid), runtimeContainers(uid)]);
    console.log(`after delete: ${sandboxes.length} sandboxes, ${containers.length} containers in crictl`);
    assert.equal(sandboxes.length, 0);
    assert.equal(containers.length, 0);
    await eventually('the log directory of the deleted pod to be removed', () => Promise.resolve(existsSync(logDir) ? undefined : true), 150_000);
    console.log(`log directory removed ${Math.round((Date.now() - deleted) / 1000)} s after the delete`);
  });

  it('removes an unused image when the image filesystem is over the high threshold; keeps images in use and the pause image', async () => {
    await apply(busyboxPod({ name: 'keeper', namespace: ns, script: 'sleep 3600' }));
    await waitForPhase(ns, 'keeper', 'Running');
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodelet-gc-e2e-'));
    tmp.push(dir);
    const ref = `nodelet.test/gc-throwaway:${randomBytes(4).toString('hex')}`;
    // A second image of the test's own, unused by any pod: it is held by the crictl container like
    // any other unused image, which proves a container nodelet did not create keeps its image.
    const bystanderRef = `nodelet.test/gc-bystander:${randomBytes(4).toString('hex')}`;
    await importThrowawayImage(ref, path.join(dir, 'throwaway'));
    await importThrowawayImage(bystanderRef, path.join(dir, 'bystander'));
    const throwaway = await eventually(`${ref} in the CRI image list`, async () => (await runtimeImages()).find((i) => namesOf(i).some((n) => n.endsWith(ref))));
    const bystander = await eventually(`${bystanderRef} in the CRI image list`, async () => (await runtimeImages()).find((i) => namesOf(i).some((n) => n.endsWith(bystanderRef))));
    const inUse = await imagesInUse();
    const before = await runtimeImages();
    const toHold = before.filter((i) => i.id !== throwaway.id && !inUse.has(i.id) && !namesOf(i).some((n) => inUse.has(n) || n === PAUSE));
    assert.ok(toHold.some((i) => i.id === bystander.id), 'the bystander image is held');
    let holder = '';
    try {
      holder = await holdImages(toHold.map((i) => i.id), dir);
      const fsInfo = JSON.parse(await crictl(['imagefsinfo', '-o', 'json'])) as { status: { imageFilesystems?: { fsId?: { mountpoint?: string } }[]; fsId?: { mountpoint?: string } } };
      const mountpoint = fsInfo.status.imageFilesystems?.[0]?.fsId?.mountpoint ?? fsInfo.status.fsId?.mountpoint ?? '';
      const fs = await statfs(mountpoint);
      const usage = 100 - Math.floor((fs.bavail * 100) / fs.blocks);
      const high = Math.max(1, usage - 1);
      console.log(`image filesystem ${mountpoint}: ${usage} % used; ${before.length} images, ${toHold.length} held in use for the test; thresholds set to ${high}/${high - 1}`);
      await patchGc({ imageHighThresholdPercent: high, imageLowThresholdPercent: high - 1, imageMinimumGCAgeSeconds: 0 });
      await eventually(`image GC to remove ${ref}`, async () => ((await runtimeImages()).some((i) => i.id === throwaway.id) ? undefined : true), 120_000);
    } finally {
      await patchGc(null);
      if (holder !== '') await crictl(['rmp', '-f', holder]);
    }
    const afterImages = await runtimeImages();
    const missing = before.filter((i) => i.id !== throwaway.id && !afterImages.some((a) => a.id === i.id));
    console.log(`images before: ${before.length}, after: ${afterImages.length}; removed: ${ref}; others missing: ${missing.length}`);
    assert.deepEqual(missing.map(namesOf), []);
    assert.ok(afterImages.some((i) => i.id === bystander.id), 'the held bystander image stays');
    await crictl(['rmi', bystander.id]);
    assert.ok(afterImages.some((i) => namesOf(i).includes('docker.io/library/busybox:1.35')));
    assert.ok(afterImages.some((i) => namesOf(i).includes(PAUSE)));
    assert.equal((await getPod(ns, 'keeper'))?.status?.phase, 'Running');
  });
  it('removes orphaned pod directories (unmounting a leftover memory emptyDir), and never a running pod’s', async () => {
    assert.ok(orphans !== undefined);
    const { plain, mounted, createdMs } = orphans;
    const keeperUid = (await waitForPhase(ns, 'dir-keeper', 'Running')).metadata?.uid ?? '';
    const keeperDir = path.join(AGENT_ROOT, 'pods', keeperUid);
    const keeperEmptyDirs = path.join(keeperDir, 'volumes', 'kubernetes.io~empty-dir');
    await eventually('the keeper to write its files', () => Promise.resolve(existsSync(path.join(keeperEmptyDirs, 'scratch', 'file')) ? true : undefined));
    await eventually('container GC to remove both orphaned pod directories', () => Promise.resolve(existsSync(plain) || existsSync(mounted) ? undefined : true), 150_000);
    const removedMs = Date.now();
    const leftMounts = await hostMountsUnder(mounted);
    console.log(`orphaned pod directories seen removed ${Math.round((removedMs - createdMs) / 1000)} s after they were made (container GC runs every 60 s); mounts left under the mounted orphan: ${leftMounts.length}`);
    assert.deepEqual(leftMounts, []);
    // The running pod's directory, files and tmpfs are untouched, and it still runs in the runtime.
    assert.equal(await readFile(path.join(keeperEmptyDirs, 'scratch', 'file'), 'utf8'), 'kept\n');
    assert.equal(await readFile(path.join(keeperEmptyDirs, 'cache', 'file'), 'utf8'), 'kept\n');
    assert.deepEqual(await hostMountsUnder(keeperDir), [path.join(keeperEmptyDirs, 'cache')]);
    assert.equal((await getPod(ns, 'dir-keeper'))?.status?.phase, 'Running');
    const sandboxes = await runtimeSandboxes(keeperUid);
    const running = (await runtimeContainers(keeperUid)).filter((c) => c.state === 'CONTAINER_RUNNING');
    console.log(`keeper in crictl: ${sandboxes.length} sandbox(es), ${running.length} running container(s)`);
    assert.equal(sandboxes.length, 1);
    assert.equal(running.length, 1);
  });

  it('removes an image unused for longer than imageMaximumGCAgeSeconds with disk-based image GC off; keeps images in use and the pause image', async () => {
    await apply(busyboxPod({ name: 'age-keeper', namespace: ns, script: 'sleep 3600' }));
    await waitForPhase(ns, 'age-keeper', 'Running');
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodelet-gc-age-e2e-'));
    tmp.push(dir);
    const ref = `nodelet.test/gc-age-throwaway:${randomBytes(4).toString('hex')}`;
    // Every unused image would go: all but the throwaway are held in use for the duration.
    const { throwaway, before, release } = await throwawayAmongHeldImages(ref, dir);
    try {
      // High threshold 100: disk usage removes nothing. The agent has run far longer than 1 s, and the
      // throwaway was never used: the image pass the new policy runs at once removes it.
      const changed = Date.now();
      await patchGc({ imageHighThresholdPercent: 100, imageMinimumGCAgeSeconds: 0, imageMaximumGCAgeSeconds: 1 });
      await eventually(`image GC to remove ${ref} for age`, async () => ((await runtimeImages()).some((i) => i.id === throwaway.id) ? undefined : true), 120_000);
      console.log(`${ref} removed ${Math.round((Date.now() - changed) / 1000)} s after imageMaximumGCAgeSeconds was set`);
    } finally {
      await patchGc(null);
      await release();
    }
    const afterImages = await runtimeImages();
    const missing = before.filter((i) => i.id !== throwaway.id && !afterImages.some((a) => a.id === i.id));
    assert.deepEqual(missing.map(namesOf), [], 'only the throwaway went');
    assert.ok(afterImages.some((i) => namesOf(i).includes('docker.io/library/busybox:1.35')));
    assert.ok(afterImages.some((i) => namesOf(i).includes(PAUSE)));
  });

  it('keeps one exited instance of each of two crash-looping containers under a node-wide limit of 2, although 5 per container are allowed', async () => {
    await patchGc({ maxDeadContainersPerPod: 5, maxDeadContainers: 2 });
    try {
      const twins = busyboxPod({ name: 'twins', namespace: ns, script: 'echo run; exit 1', restartPolicy: 'Always' }) as { spec: { containers: Record<string, unknown>[] } };
      twins.spec.containers.push({ ...twins.spec.containers[0], name: 'side' });
      await apply(twins);
      // Four instances of each at least: three or more exited, all of which 5 per container would keep.
      const pod = await eventually('both containers to restart 3 times', async () => {
        const p = await getPod(ns, 'twins');
        return p !== undefined && ['main', 'side'].every((n) => (containerStatusOf(p, n)?.restartCount ?? 0) >= 3) ? p : undefined;
      }, 300_000);
      const uid = pod.metadata?.uid ?? '';
      // However many pod containers the node has, 2 of them share at most one each: floor(2 / n) ≤ 1, at least 1.
      const exited = await eventually('container GC to leave one exited instance of each', async () => {
        const instances = await runtimeContainers(uid);
        const counts = ['main', 'side'].map((n) => instances.filter((c) => c.name === n && c.state === 'CONTAINER_EXITED').length);
        return counts.every((n) => n === 1) ? instances : undefined;
      }, 150_000);
      console.log(`twins in crictl: ${exited.map((c) => `${c.name}#${c.attempt}:${c.state}`).join(', ')}`);
      const restarts = ['main', 'side'].map((n) => containerStatusOf(pod, n)?.restartCount ?? -1);
      assert.ok(restarts.every((r) => r >= 3), `restart counts ${restarts.join(', ')}`);
    } finally {
      await patchGc(null);
    }
  });
});
