import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { V1Container, V1VolumeMount } from '@kubernetes/client-node';
import { isVolumeError } from './errors.js';
import { containerMounts } from './mounts.js';
import { prepareContainerMounts } from './subpath.js';
import type { PreparedVolumes } from './types.js';

const prepared: PreparedVolumes = {
  hostPaths: new Map([
    ['data', '/var/lib/nodelet/pods/u/volumes/kubernetes.io~empty-dir/data'],
    ['cfg', '/var/lib/nodelet/pods/u/volumes/kubernetes.io~configmap/cfg'],
  ]),
  readOnlyVolumes: new Set(['cfg']),
};

function container(volumeMounts: V1VolumeMount[], env: V1Container['env'] = []): V1Container {
  return { name: 'app', image: 'busybox', volumeMounts, env };
}

function configError(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(isVolumeError(error));
    assert.equal(error.reason, 'CreateContainerConfigError');
    assert.match(error.message, pattern);
    return true;
  });
}

describe('containerMounts', () => {
  it('mounts each volume at its path, read-only when the mount or the volume kind says so', () => {
    const mounts = containerMounts(
      container([
        { name: 'data', mountPath: '/data' },
        { name: 'data', mountPath: '/ro-data', readOnly: true },
        { name: 'cfg', mountPath: '/etc/app' },
      ]),
      prepared,
    );

    assert.deepEqual(mounts, [
      { containerPath: '/data', hostPath: prepared.hostPaths.get('data'), readonly: false, selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE' },
      { containerPath: '/ro-data', hostPath: prepared.hostPaths.get('data'), readonly: true, selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE' },
      { containerPath: '/etc/app', hostPath: prepared.hostPaths.get('cfg'), readonly: true, selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE' },
    ]);
  });

  it('maps mountPropagation to the CRI propagation modes', () => {
    const modes = ['None', 'HostToContainer', 'Bidirectional'].map(
      (mode) => containerMounts(container([{ name: 'data', mountPath: '/d', mountPropagation: mode }]), prepared)[0]?.propagation,
    );

    assert.deepEqual(modes, ['PROPAGATION_PRIVATE', 'PROPAGATION_HOST_TO_CONTAINER', 'PROPAGATION_BIDIRECTIONAL']);
    configError(() => containerMounts(container([{ name: 'data', mountPath: '/d', mountPropagation: 'Sideways' }]), prepared), /invalid mountPropagation/);
  });

  it('resolves subPath inside the volume directory', () => {
    const [mount] = containerMounts(container([{ name: 'data', mountPath: '/logs', subPath: 'app//logs/' }]), prepared);

    assert.equal(mount?.hostPath, `${prepared.hostPaths.get('data')}/app/logs`);
  });

  it('rejects a subPath that climbs out of the volume or is absolute', () => {
    configError(() => containerMounts(container([{ name: 'data', mountPath: '/x', subPath: '../../../etc' }]), prepared), /must not contain '\.\.'/);
    configError(() => containerMounts(container([{ name: 'data', mountPath: '/x', subPath: 'a/../../b' }]), prepared), /must not contain '\.\.'/);
    configError(() => containerMounts(container([{ name: 'data', mountPath: '/x', subPath: '/etc' }]), prepared), /absolute/);
  });

  it('expands subPathExpr from the container environment', () => {
    const env = [{ name: 'POD_NAME', value: 'web-0' }];
    const [fromSpec] = containerMounts(container([{ name: 'data', mountPath: '/x', subPathExpr: 'pods/$(POD_NAME)/$$HOME' }], env), prepared);
    const [fromResolved] = containerMounts(container([{ name: 'data', mountPath: '/x', subPathExpr: '$(NODE)' }]), prepared, { env: { NODE: 'n1' } });

    assert.equal(fromSpec?.hostPath, `${prepared.hostPaths.get('data')}/pods/web-0/$HOME`);
    assert.equal(fromResolved?.hostPath, `${prepared.hostPaths.get('data')}/n1`);
    configError(() => containerMounts(container([{ name: 'data', mountPath: '/x', subPathExpr: '$(UNSET)' }]), prepared), /missing value for UNSET/);
    configError(() => containerMounts(container([{ name: 'data', mountPath: '/x', subPathExpr: '$(P)' }], [{ name: 'P', value: '..' }]), prepared), /must not contain/);
  });

  it('fails for a volume the pod does not have', () => {
    configError(() => containerMounts(container([{ name: 'ghost', mountPath: '/g' }]), prepared), /cannot find volume "ghost" to mount into container "app"/);
  });

  it("resolves recursiveReadOnly as the kubelet: IfPossible follows the handler, Enabled needs it, neither on a writable or propagating mount", () => {
    const rro = (mount: Partial<V1VolumeMount>, supported: boolean): boolean | undefined =>
      containerMounts(container([{ name: 'data', mountPath: '/d', ...mount }]), prepared, { recursiveReadOnlySupported: supported })[0]?.recursiveReadOnly;
    assert.equal(rro({ readOnly: true, recursiveReadOnly: 'IfPossible' }, true), true);
    assert.equal(rro({ readOnly: true, recursiveReadOnly: 'IfPossible' }, false), undefined, 'plain read-only where the runtime cannot');
    assert.equal(rro({ readOnly: true, recursiveReadOnly: 'Enabled' }, true), true);
    assert.equal(rro({ readOnly: true, recursiveReadOnly: 'Disabled' }, true), undefined);
    assert.equal(rro({ readOnly: true }, true), undefined, 'unset: not recursive');
    configError(() => rro({ readOnly: true, recursiveReadOnly: 'Enabled' }, false), /^volume "data" requested recursive read-only mode, but it is not supported by the runtime$/);
    configError(() => rro({ recursiveReadOnly: 'IfPossible' }, true), /^volume "data" requested recursive read-only mode, but it is not read-only$/);
    configError(() => rro({ readOnly: true, recursiveReadOnly: 'Enabled', mountPropagation: 'HostToContainer' }, true), /^volume "data" requested recursive read-only mode, but it is not compatible with propagation "HostToContainer"$/);
  });

  it('returns no mounts for a container without volumeMounts', () => {
    assert.deepEqual(containerMounts({ name: 'bare', image: 'busybox' }, prepared), []);
  });
});

describe('prepareContainerMounts', () => {
  let root: string;
  let volume: string;
  let onDisk: PreparedVolumes;
  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'nodelet-subpath-'));
    volume = path.join(root, 'volume');
    await fs.mkdir(volume);
    await fs.chmod(volume, 0o777);
    onDisk = { hostPaths: new Map([['data', volume]]) };
  });
  afterEach(async () => {
    await fs.rm(root, { recursive: true, force: true });
  });

  it('creates a missing subPath directory with the volume mode', async () => {
    const mounts = await prepareContainerMounts(container([{ name: 'data', mountPath: '/x', subPath: 'a/b' }]), onDisk);

    assert.equal(mounts[0]?.hostPath, path.join(volume, 'a/b'));
    assert.equal((await fs.stat(path.join(volume, 'a/b'))).mode & 0o777, 0o777);
  });

  it('gives a created subPath directory the volume root\'s setgid and sticky bits too (fsGroup volumes are g+s)', async () => {
    await fs.chmod(volume, 0o3777);
    await prepareContainerMounts(container([{ name: 'data', mountPath: '/x', subPath: 'c/d' }]), onDisk);
    assert.equal((await fs.stat(path.join(volume, 'c'))).mode & 0o7777, 0o3777);
    assert.equal((await fs.stat(path.join(volume, 'c/d'))).mode & 0o7777, 0o3777);
  });

  it('rejects a subPath that leaves the volume through a symlink a container planted', async () => {
    await fs.mkdir(path.join(root, 'outside'));
    await fs.symlink('/etc', path.join(volume, 'evil'));
    await fs.symlink('../outside', path.join(volume, 'relative'));

    for (const subPath of ['evil', 'evil/passwd', 'relative/x']) {
      await assert.rejects(
        prepareContainerMounts(container([{ name: 'data', mountPath: '/x', subPath }]), onDisk),
        (error: unknown) => isVolumeError(error) && error.reason === 'CreateContainerConfigError' && error.message.includes('resolves outside the volume'),
        subPath,
      );
    }
    await assert.rejects(fs.stat(path.join(root, 'outside', 'x')), { code: 'ENOENT' });
  });

  it('accepts symlinks that stay inside the volume, like the atomic-writer key links', async () => {
    await fs.mkdir(path.join(volume, 'real'));
    await fs.writeFile(path.join(volume, 'real', 'f'), 'x');
    await fs.symlink('real', path.join(volume, 'alias'));

    const mounts = await prepareContainerMounts(container([{ name: 'data', mountPath: '/f', subPath: 'alias/f' }]), onDisk);

    assert.equal(mounts[0]?.hostPath, path.join(volume, 'alias/f'));
  });
});
