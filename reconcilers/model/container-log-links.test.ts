/** The container log links on a real temporary directory: made, left alone, removed. */
import assert from 'node:assert/strict';
import { lstat, mkdir, mkdtemp, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { createContainerLogLink, isLogLinkError, removeContainerLogLink } from './container-log-links.js';

const owner = { podName: 'web', podNamespace: 'shop', containerName: 'nginx', containerId: '0123456789abcdef' };
const NAME = 'web_shop_nginx-0123456789abcdef.log';

describe('container log links', () => {
  let base = '';
  let dir = '';
  let logFile = '';

  beforeEach(async () => {
    base = await mkdtemp(path.join(os.tmpdir(), 'nodelet-log-links-'));
    dir = path.join(base, 'containers');
    logFile = path.join(base, 'pods', 'shop_web_uid-1', 'nginx', '0.log');
    await mkdir(path.dirname(logFile), { recursive: true });
    await writeFile(logFile, 'hello\n');
  });

  afterEach(async () => {
    await rm(base, { recursive: true, force: true });
  });

  it('links <dir>/<pod>_<ns>_<container>-<id>.log to the log file, making the directory when missing', async () => {
    assert.equal(await createContainerLogLink({ dir, owner, logFile }), 'created');
    assert.equal(await readlink(path.join(dir, NAME)), logFile);
    assert.equal(await readFile(path.join(dir, NAME), 'utf8'), 'hello\n');
  });

  it('makes no link when the log file does not exist: it would only dangle', async () => {
    assert.equal(await createContainerLogLink({ dir, owner, logFile: path.join(base, 'nowhere.log') }), 'no-log-file');
    await assert.rejects(lstat(path.join(dir, NAME)), { code: 'ENOENT' });
  });

  it('leaves an existing entry of that name as it is', async () => {
    await mkdir(dir);
    await symlink('/elsewhere', path.join(dir, NAME));
    assert.equal(await createContainerLogLink({ dir, owner, logFile }), 'exists');
    assert.equal(await readlink(path.join(dir, NAME)), '/elsewhere');
  });

  it('throws a LogLinkError naming the link when it cannot be made', async () => {
    await writeFile(dir, 'a file where the directory should be');
    const error: unknown = await createContainerLogLink({ dir, owner, logFile }).catch((e: unknown) => e);
    assert.ok(isLogLinkError(error), String(error));
    assert.equal(error.link, path.join(dir, NAME));
    assert.equal(error.operation, 'create');
  });

  it('removes the link of that name only, whatever it points at; one already gone is no error', async () => {
    await createContainerLogLink({ dir, owner, logFile });
    await createContainerLogLink({ dir, owner: { ...owner, containerId: 'fedcba9876543210' }, logFile });
    assert.equal(await removeContainerLogLink(dir, owner), true);
    await assert.rejects(lstat(path.join(dir, NAME)), { code: 'ENOENT' });
    assert.ok((await lstat(path.join(dir, 'web_shop_nginx-fedcba9876543210.log'))).isSymbolicLink(), "the other container's link stays");
    assert.equal(await readFile(logFile, 'utf8'), 'hello\n', 'the log file stays');
    assert.equal(await removeContainerLogLink(dir, owner), false);
  });

  it('throws a LogLinkError when an entry of that name cannot be removed', async () => {
    await mkdir(path.join(dir, NAME), { recursive: true });
    const error: unknown = await removeContainerLogLink(dir, owner).catch((e: unknown) => e);
    assert.ok(isLogLinkError(error), String(error));
    assert.equal(error.operation, 'remove');
  });
});
