/** The root directory made shared as the kubelet's MakeRShared: only when its mount is not, by a bind mount of itself. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseMountInfo } from '../../util/mountinfo.js';
import { makeRootShared, SharedRootError } from './shared-root.js';

const table = (rootOptional: string, extra = ''): string =>
  [`22 1 8:1 / / rw,relatime ${rootOptional} - ext4 /dev/vda rw`, '30 22 0:26 / /proc rw shared:5 - proc proc rw', extra].filter((l) => l !== '').join('\n');

function deps(text: string, fail?: Error): { calls: string[][]; readMounts: () => Promise<ReturnType<typeof parseMountInfo>>; mount: (args: readonly string[]) => Promise<void> } {
  const calls: string[][] = [];
  return {
    calls,
    readMounts: () => Promise.resolve(parseMountInfo(text)),
    mount: (args) => {
      calls.push([...args]);
      return fail === undefined ? Promise.resolve() : Promise.reject(fail);
    },
  };
}

describe('the root directory on a shared mount', () => {
  it('does nothing when the mount it lies on is shared', async () => {
    const d = deps(table('shared:1'));
    assert.equal(await makeRootShared('/var/lib/nodelet', d), 'already-shared');
    assert.deepEqual(d.calls, []);
  });

  it('bind-mounts it onto itself and makes it rshared when its mount is private', async () => {
    const d = deps(table(''));
    assert.equal(await makeRootShared('/var/lib/nodelet', d), 'bind-mounted');
    assert.deepEqual(d.calls, [['--bind', '/var/lib/nodelet', '/var/lib/nodelet'], ['--make-rshared', '/var/lib/nodelet']]);
  });

  it('reads the mount the directory lies on, the last of a stacked point (a slave mount is not shared)', async () => {
    const own = deps(table('shared:1', '40 22 8:1 /x /var/lib/nodelet rw master:1 - ext4 /dev/vda rw'));
    assert.equal(await makeRootShared('/var/lib/nodelet', own), 'bind-mounted');
    const sibling = deps(table('shared:1', '40 22 8:1 /x /var/lib/nodelet-other rw - ext4 /dev/vda rw'));
    assert.equal(await makeRootShared('/var/lib/nodelet', sibling), 'already-shared');
    const stacked = deps(table('', '40 22 8:1 /x /var/lib rw - ext4 /dev/vda rw\n41 22 8:1 /x /var/lib rw shared:9 - ext4 /dev/vda rw'));
    assert.equal(await makeRootShared('/var/lib/nodelet', stacked), 'already-shared');
  });

  it('fails with a typed error naming the directory when mount fails', async () => {
    const d = deps(table(''), new Error('mount: permission denied'));
    await assert.rejects(makeRootShared('/var/lib/nodelet', d), (error: unknown) => {
      assert.ok(error instanceof SharedRootError);
      assert.equal(error.dir, '/var/lib/nodelet');
      assert.match(error.message, /error configuring root directory \/var\/lib\/nodelet: mount: permission denied/);
      return true;
    });
  });
});
