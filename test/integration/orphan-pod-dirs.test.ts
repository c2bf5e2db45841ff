/**
 * Orphaned pod directory GC with real mounts (needs root; the cluster is not used): a memory-backed
 * emptyDir's tmpfs under an orphaned pod directory is unmounted and the directory removed, while a
 * live pod's directory and its tmpfs stay, and an orphan with a bind mount inside stays, mounted.
 * The runtime is the recording fake; the mount table is the host's `/proc/self/mountinfo`.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { GcManager } from '../../controllers/gc/gc-manager.js';
import { gcPolicyOf } from '../../controllers/gc/gc-policy.js';
import { mountTmpfs, mountsUnder, unmountAllUnder } from '../../reconcilers/volumes/mounts-table.js';
import { createFakeClock } from '../doubles/fake-clock.js';
import { FakeRuntime } from '../doubles/fake-runtime.js';
import { NO_POD_EVENTS } from '../doubles/pod-events.js';

const run = promisify(execFile);
const isRoot = process.getuid?.() === 0;

describe('orphaned pod directories with real mounts', { skip: isRoot ? false : 'needs root to mount tmpfs' }, () => {
  let base = '';
  let rootDir = '';
  const uid = (name: string): string => `${name}-${randomBytes(4).toString('hex')}`;
  const emptyDir = (podUid: string): string => path.join(rootDir, 'pods', podUid, 'volumes', 'kubernetes.io~empty-dir', 'cache');

  before(async () => {
    base = await mkdtemp(path.join(os.tmpdir(), 'nodelet-orphans-'));
    rootDir = path.join(base, 'root');
  });
  after(async () => {
    await unmountAllUnder(base);
    await rm(base, { recursive: true, force: true });
  });

  async function podWithTmpfs(podUid: string): Promise<string> {
    const dir = emptyDir(podUid);
    await mkdir(dir, { recursive: true });
    await mountTmpfs(dir, ['size=1m', 'mode=0777']);
    await writeFile(path.join(dir, 'file'), 'in memory\n');
    return dir;
  }

  it('unmounts and removes an orphan’s emptyDir tmpfs; a live pod’s and an orphan with a bind mount stay', async () => {
    const orphan = uid('orphan');
    const live = uid('live');
    const bound = uid('bound');
    const orphanVolume = await podWithTmpfs(orphan);
    const liveVolume = await podWithTmpfs(live);
    const source = path.join(base, 'bind-source');
    await mkdir(source, { recursive: true });
    await writeFile(path.join(source, 'precious'), 'not nodelet’s\n');
    const boundPoint = path.join(emptyDir(bound), 'sub');
    await mkdir(boundPoint, { recursive: true });
    await run('mount', ['--bind', source, boundPoint]);

    const clock = createFakeClock();
    const runtime = new FakeRuntime({ now: () => clock.now() });
    const gc = new GcManager({
      runtime,
      images: runtime,
      nodeName: 'node-a',
      podLogDir: path.join(base, 'logs'),
      containerLogLinkDir: path.join(base, 'containers'),
      rootDir,
      pods: { has: (u) => u === live, synced: () => true, confirmGone: () => Promise.resolve(true) },
      podEvents: NO_POD_EVENTS,
      sandboxImage: 'registry.k8s.io/pause:3.10',
      policy: gcPolicyOf({ maxDeadContainersPerPod: 1, maxDeadContainers: -1, minContainerAgeSeconds: 0, imageHighThresholdPercent: 85, imageLowThresholdPercent: 80, imageMinimumGCAgeSeconds: 0, imageMaximumGCAgeSeconds: 0 }),
      clock,
      logger: pino({ level: process.env.LOG_LEVEL ?? 'silent' }),
    });
    await gc.collectContainers();

    assert.deepEqual(await mountsUnder(path.join(rootDir, 'pods', orphan)), [], 'the orphan’s tmpfs is unmounted');
    assert.equal(existsSync(path.join(rootDir, 'pods', orphan)), false, 'the orphan’s directory is removed');
    assert.deepEqual(await mountsUnder(path.join(rootDir, 'pods', live)), [liveVolume], 'the live pod’s tmpfs stays mounted');
    assert.equal(existsSync(path.join(liveVolume, 'file')), true);
    assert.deepEqual(await mountsUnder(path.join(rootDir, 'pods', bound)), [boundPoint], 'the bind mount stays');
    assert.equal(existsSync(path.join(source, 'precious')), true, 'nothing removed through the bind mount');
    assert.equal(orphanVolume.startsWith(rootDir), true);
  });
});
