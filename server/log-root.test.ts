/**
 * Looking names up beneath the log directory as Go's `os.Root` (what the kubelet v1.37.2's
 * `root.Stat` answered on the same layout): `..` that stays inside is resolved after the
 * components before it, through links too; anything leading out is refused in Go's words.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, realpath, rename, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isRootPathError, lookupInRoot, openFoundFile, splitInRoot } from './log-root.js';

describe('lookupInRoot (os.Root)', () => {
  let top = '';
  let root = '';

  before(async () => {
    top = await realpath(await mkdtemp(path.join(os.tmpdir(), 'log-root-')));
    root = path.join(top, 'var-log');
    await mkdir(path.join(root, 'pods', 'ns', 'app'), { recursive: true });
    await writeFile(path.join(root, 'syslog'), 'x\n');
    await symlink('pods', path.join(root, 'podlink'));
  });

  after(async () => {
    await rm(top, { recursive: true, force: true });
  });

  /** The lookup's outcome: the path found relative to the root, or Go's error text. */
  const outcome = (name: string): Promise<string> =>
    lookupInRoot(root, name, 'statat').then(
      (entry) => path.relative(root, entry.path) || '.',
      (error: unknown) => (isRootPathError(error) ? error.message : Promise.reject(error instanceof Error ? error : new Error(String(error)))),
    );

  it("resolves `..` after the components before it, as Go's (through a link too)", async () => {
    assert.equal(await outcome('./pods/../syslog'), 'syslog');
    assert.equal(await outcome('./podlink/../syslog'), 'syslog');
    assert.equal(await outcome('pods//ns/./app/'), path.join('pods', 'ns', 'app'));
    assert.equal(await outcome('./pods/ns/../..'), '.');
  });

  it('refuses what leads out or is not there, in Go’s words', async () => {
    assert.equal(await outcome('./pods/../../x'), 'statat ./pods/../../x: path escapes from parent');
    assert.equal(await outcome('x/../syslog'), 'statat x/../syslog: no such file or directory');
    assert.equal(await outcome('/syslog'), 'statat /syslog: path escapes from parent');
    assert.equal(await outcome('syslog/'), 'statat syslog/: not a directory');
  });

  it('splits names as splitPathInRoot: "." dropped except last, a trailing slash noted', () => {
    assert.deepEqual(splitInRoot('./a//./b/.'), { parts: ['a', 'b', '.'], endsInSlash: false });
    assert.deepEqual(splitInRoot('a/', ['p'], ['s']), { parts: ['p', 'a', 's'], endsInSlash: true });
    assert.equal(splitInRoot(''), 'empty path');
  });

  it('opens only the regular file the walk found', async () => {
    const entry = await lookupInRoot(root, 'syslog', 'openat');
    const handle = await openFoundFile(root, entry);
    assert.ok(handle !== undefined);
    await handle.close();
    // Swapped for another file since the walk (made while the first exists: another inode): as if absent.
    await writeFile(path.join(root, 'other'), 'other\n');
    await rename(path.join(root, 'other'), path.join(root, 'syslog'));
    assert.equal(await openFoundFile(root, entry), undefined);
  });
});
