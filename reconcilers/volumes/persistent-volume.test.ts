import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { createFakeVolumeSourceApi, type FakeVolumeSourceApi } from '../../test/doubles/fake-volume-source-api.js';
import { isVolumeError } from './errors.js';
import { resolveClaim } from './persistent-volume.js';

const NS = 'shop';

function claim(name: string, over: { phase?: string; volumeName?: string; deleting?: boolean } = {}): V1PersistentVolumeClaim {
  return {
    metadata: { name, namespace: NS, uid: `uid-${name}`, ...(over.deleting === true ? { deletionTimestamp: new Date() } : {}) },
    spec: { volumeName: over.volumeName ?? `pv-${name}` },
    status: { phase: over.phase ?? 'Bound' },
  };
}

function pv(name: string, claimName: string, spec: V1PersistentVolume['spec']): V1PersistentVolume {
  return { metadata: { name }, spec: { ...spec, claimRef: { namespace: NS, name: claimName, uid: `uid-${claimName}` } } };
}

describe('resolveClaim', () => {
  let api: FakeVolumeSourceApi;
  let dir: string;
  const resolve = (claimName: string, readOnly = false): ReturnType<typeof resolveClaim> =>
    resolveClaim({ api, namespace: NS, volumeName: 'data', source: { claimName, readOnly } });
  const failure = async (claimName: string): Promise<string> => {
    try {
      await resolve(claimName);
    } catch (error) {
      assert.ok(isVolumeError(error) && error.reason === 'FailedMount', `a FailedMount VolumeError, got ${String(error)}`);
      return error.message;
    }
    return assert.fail('expected the claim to be refused');
  };

  beforeEach(async () => {
    api = createFakeVolumeSourceApi();
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'nodelet-pv-'));
  });
  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('mounts a bound hostPath PV from its path, and a local PV from its directory (taking fsGroup)', async () => {
    api.claims.set(`${NS}/a`, claim('a'));
    api.persistentVolumes.set('pv-a', pv('pv-a', 'a', { hostPath: { path: dir, type: 'Directory' } }));
    api.claims.set(`${NS}/b`, claim('b'));
    api.persistentVolumes.set('pv-b', pv('pv-b', 'b', { local: { path: dir } }));
    assert.deepEqual(await resolve('a', true), { hostPath: dir, readOnly: true, ownershipManaged: false });
    assert.deepEqual(await resolve('b'), { hostPath: dir, readOnly: false, ownershipManaged: true });
  });

  it('creates a DirectoryOrCreate hostPath PV directory, as a hostPath volume does', async () => {
    const target = path.join(dir, 'made');
    api.claims.set(`${NS}/a`, claim('a'));
    api.persistentVolumes.set('pv-a', pv('pv-a', 'a', { hostPath: { path: target, type: 'DirectoryOrCreate' } }));
    assert.equal((await resolve('a')).hostPath, target);
    assert.ok((await fs.stat(target)).isDirectory());
  });

  it("refuses a missing, deleting or unbound claim with the kubelet's cause", async () => {
    api.claims.set(`${NS}/pending`, claim('pending', { phase: 'Pending', volumeName: '' }));
    api.claims.set(`${NS}/deleting`, claim('deleting', { deleting: true }));
    assert.equal(await failure('missing'), 'volume "data": error processing PVC shop/missing: failed to fetch PVC from API server: persistentvolumeclaims "missing" not found');
    assert.equal(await failure('deleting'), 'volume "data": error processing PVC shop/deleting: PVC is being deleted');
    assert.equal(await failure('pending'), 'volume "data": error processing PVC shop/pending: PVC shop/pending has non-bound phase ("Pending") or empty pvc.Spec.VolumeName ("")');
  });

  it('refuses a PV that is missing or bound to another claim', async () => {
    api.claims.set(`${NS}/a`, claim('a'));
    assert.match(await failure('a'), /failed to fetch PV "pv-a" from API server: persistentvolumes "pv-a" not found/);
    api.persistentVolumes.set('pv-a', pv('pv-a', 'other', { hostPath: { path: dir } }));
    assert.match(await failure('a'), /PV "pv-a" is not bound to this claim \(its claimRef is shop\/other uid uid-other\)/);
  });

  it('refuses block mode, a block or missing local path, and every source nodelet cannot mount', async () => {
    const cases: [string, V1PersistentVolume['spec'], RegExp][] = [
      ['block', { volumeMode: 'Block', local: { path: dir } }, /volumeMode Block: block volumes are not supported by nodelet/],
      ['gone', { local: { path: path.join(dir, 'nope') } }, /local PV "pv-gone": path ".*nope" does not exist/],
      ['nfs', { nfs: { server: '127.0.0.1', path: '/x' } }, /PV "pv-nfs" is a nfs volume: nfs volumes are not supported by nodelet/],
      ['csi', { csi: { driver: 'x', volumeHandle: 'h' } }, /PV "pv-csi" is a csi volume: csi volumes are not supported by nodelet/],
      ['badhost', { hostPath: { path: path.join(dir, 'absent'), type: 'Directory' } }, /hostPath PV "pv-badhost": hostPath type check failed/],
    ];
    for (const [name, spec, pattern] of cases) {
      api.claims.set(`${NS}/${name}`, claim(name));
      api.persistentVolumes.set(`pv-${name}`, pv(`pv-${name}`, name, spec));
      assert.match(await failure(name), pattern, name);
    }
  });

  it("takes a generic ephemeral volume's claim only when the pod is its controller owner", async () => {
    const owned = (uid: string): V1PersistentVolumeClaim => ({ ...claim('web-0-scratch'), metadata: { ...claim('web-0-scratch').metadata, ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'web-0', uid, controller: true }] } });
    api.persistentVolumes.set('pv-web-0-scratch', pv('pv-web-0-scratch', 'web-0-scratch', { hostPath: { path: dir } }));
    const ephemeral = (): ReturnType<typeof resolveClaim> =>
      resolveClaim({ api, namespace: NS, volumeName: 'scratch', source: { claimName: 'web-0-scratch' }, ephemeralFor: { name: 'web-0', uid: 'pod-uid' } });

    api.claims.set(`${NS}/web-0-scratch`, owned('another-pod'));
    await assert.rejects(ephemeral(), /error processing PVC shop\/web-0-scratch: PVC shop\/web-0-scratch was not created for pod shop\/web-0 \(pod is not owner\)/);
    api.claims.set(`${NS}/web-0-scratch`, owned('pod-uid'));
    assert.equal((await ephemeral()).hostPath, dir);
  });
});
