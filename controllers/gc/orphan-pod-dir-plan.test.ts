/**
 * The orphaned pod directory plan over plain data: which directories go, after unmounting what,
 * and which orphans stay and why.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planOrphanPodDirs, type OrphanPodDirInput, type PodDirListing } from './orphan-pod-dir-plan.js';

const ROOT = '/var/lib/nodelet/pods';
const dir = (uid: string, pluginDirs: string[] = ['kubernetes.io~empty-dir']): PodDirListing => ({ uid, path: `${ROOT}/${uid}`, pluginDirs });
const tmpfs = (mountPoint: string): { mountPoint: string; fsType: string } => ({ mountPoint, fsType: 'tmpfs' });

function input(over: Partial<OrphanPodDirInput>): OrphanPodDirInput {
  return { dirs: [], mounts: [], synced: true, known: () => false, inRuntime: new Set(), ...over };
}

describe('planOrphanPodDirs', () => {
  it('removes the directory of a UID no source has and nothing in the runtime has; never one that a source or the runtime has', () => {
    const plan = planOrphanPodDirs(input({ dirs: [dir('orphan'), dir('live'), dir('running')], known: (uid) => uid === 'live', inRuntime: new Set(['running']) }));
    assert.deepEqual(plan.remove.map((r) => r.dir.uid), ['orphan']);
    assert.deepEqual(plan.remove[0]?.unmount, []);
    assert.equal(plan.skip.length, 0);
  });

  it('decides nothing before every source has synced', () => {
    const plan = planOrphanPodDirs(input({ dirs: [dir('orphan')], synced: false }));
    assert.deepEqual(plan, { remove: [], skip: [] });
  });

  it('unmounts nodelet’s own memory emptyDir tmpfs mounts (deepest first) before removing', () => {
    const mounts = [tmpfs(`${ROOT}/orphan/volumes/kubernetes.io~empty-dir/a`), tmpfs(`${ROOT}/orphan/volumes/kubernetes.io~empty-dir/cache-long`), tmpfs(`${ROOT}/other/volumes/kubernetes.io~empty-dir/a`)];
    const plan = planOrphanPodDirs(input({ dirs: [dir('orphan')], mounts }));
    assert.deepEqual(plan.remove.map((r) => r.unmount), [[`${ROOT}/orphan/volumes/kubernetes.io~empty-dir/cache-long`, `${ROOT}/orphan/volumes/kubernetes.io~empty-dir/a`]]);
  });

  it('keeps an orphan with any other mount inside (a bind mount, a tmpfs elsewhere), naming it', () => {
    const bind = { mountPoint: `${ROOT}/a/volumes/kubernetes.io~empty-dir/x/sub`, fsType: 'ext4' };
    const elsewhere = tmpfs(`${ROOT}/b/etc-hosts-dir`);
    const onThePodDir = tmpfs(`${ROOT}/c`);
    const inOtherPlugin = tmpfs(`${ROOT}/e/volumes/kubernetes.io~secret/s`);
    const plan = planOrphanPodDirs(input({ dirs: [dir('a'), dir('b'), dir('c'), dir('d'), dir('e')], mounts: [bind, elsewhere, onThePodDir, tmpfs(`${ROOT}/d/volumes/kubernetes.io~empty-dir/m`), inOtherPlugin] }));
    assert.deepEqual(plan.remove.map((r) => r.dir.uid), ['d']);
    assert.deepEqual(plan.skip.map((s) => s.dir.uid), ['a', 'b', 'c', 'e']);
    assert.match(plan.skip[0]?.reason ?? '', /kubernetes\.io~empty-dir\/x\/sub/);
  });

  it('does not take a mount of a similarly named sibling for one inside', () => {
    const plan = planOrphanPodDirs(input({ dirs: [dir('ab')], mounts: [{ mountPoint: `${ROOT}/abc/volumes/x`, fsType: 'ext4' }] }));
    assert.deepEqual(plan.remove.map((r) => r.dir.uid), ['ab']);
  });

  it('keeps an orphan holding a volume plugin directory nodelet does not write', () => {
    const plan = planOrphanPodDirs(input({ dirs: [dir('csi', ['kubernetes.io~secret', 'kubernetes.io~csi']), dir('ours', ['kubernetes.io~configmap', 'kubernetes.io~projected', 'kubernetes.io~downward-api', 'kubernetes.io~secret']), dir('bare', [])] }));
    assert.deepEqual(plan.remove.map((r) => r.dir.uid), ['ours', 'bare']);
    assert.deepEqual(plan.skip.map((s) => [s.dir.uid, s.reason]), [['csi', 'volume directories nodelet does not write are inside: kubernetes.io~csi']]);
  });
});
