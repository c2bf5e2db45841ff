import assert from 'node:assert/strict';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { writeAtomically } from './atomic-writer.js';
import { cleanPayloadPath, type Payload } from './payload.js';

const NOW = new Date('2024-05-01T12:34:56Z');

function payloadOf(files: Record<string, string>, mode = 0o644): Payload {
  return new Map(Object.entries(files).map(([key, text]) => [key, { data: Buffer.from(text), mode }]));
}

async function read(dir: string, name: string): Promise<string> {
  return fs.readFile(path.join(dir, name), 'utf8');
}

describe('writeAtomically', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'nodelet-atomic-'));
  });
  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('puts the files in a timestamped directory behind ..data and links each name to ..data/<name>', async () => {
    const written = await writeAtomically({ targetDir: dir, payload: payloadOf({ a: 'A', 'sub/b': 'B' }), now: NOW });

    assert.equal(written, true);
    const version = await fs.readlink(path.join(dir, '..data'));
    assert.match(version, /^\.\.2024_05_01_12_34_56\.\w+$/);
    assert.equal(await fs.readlink(path.join(dir, 'a')), '..data/a');
    assert.equal(await fs.readlink(path.join(dir, 'sub')), '..data/sub');
    assert.equal(await read(dir, 'a'), 'A');
    assert.equal(await read(dir, 'sub/b'), 'B');
    assert.equal((await fs.stat(path.join(dir, version))).mode & 0o777, 0o755);
    assert.equal((await fs.stat(path.join(dir, version, 'sub'))).mode & 0o777, 0o755);
    assert.deepEqual((await fs.readdir(dir)).sort(), ['..data', 'a', 'sub', version].sort());
  });

  it('gives every file exactly its mode whatever the umask', async () => {
    const previous = process.umask(0o077);
    try {
      const payload: Payload = new Map([
        ['open', { data: Buffer.from('1'), mode: 0o644 }],
        ['private', { data: Buffer.from('2'), mode: 0o400 }],
      ]);
      await writeAtomically({ targetDir: dir, payload, now: NOW });
    } finally {
      process.umask(previous);
    }
    assert.equal((await fs.stat(path.join(dir, 'open'))).mode & 0o777, 0o644);
    assert.equal((await fs.stat(path.join(dir, 'private'))).mode & 0o777, 0o400);
  });

  it('writes nothing when the contents are unchanged', async () => {
    await writeAtomically({ targetDir: dir, payload: payloadOf({ a: 'A' }), now: NOW });
    const before = await fs.readlink(path.join(dir, '..data'));

    const written = await writeAtomically({ targetDir: dir, payload: payloadOf({ a: 'A' }), now: new Date(NOW.getTime() + 60_000) });

    assert.equal(written, false);
    assert.equal(await fs.readlink(path.join(dir, '..data')), before);
  });

  it('swaps in a new version, removing the old version and the names no longer present', async () => {
    await writeAtomically({ targetDir: dir, payload: payloadOf({ a: 'A', gone: 'G' }), now: NOW });
    const oldVersion = await fs.readlink(path.join(dir, '..data'));

    await writeAtomically({ targetDir: dir, payload: payloadOf({ a: 'A2', added: 'N' }), now: new Date(NOW.getTime() + 1000) });

    const newVersion = await fs.readlink(path.join(dir, '..data'));
    assert.notEqual(newVersion, oldVersion);
    assert.equal(await read(dir, 'a'), 'A2');
    assert.equal(await read(dir, 'added'), 'N');
    assert.deepEqual((await fs.readdir(dir)).sort(), ['..data', 'a', 'added', newVersion].sort());
  });

  it('keeps readers on the complete old version until the single rename switches them to the new one', async () => {
    await writeAtomically({ targetDir: dir, payload: payloadOf({ a: 'old-a', b: 'old-b' }), now: NOW });
    const seenMidWrite: string[] = [];

    await writeAtomically({
      targetDir: dir,
      payload: payloadOf({ a: 'new-a', b: 'new-b' }),
      now: new Date(NOW.getTime() + 1000),
      // Runs after the new files are written, before they become visible.
      setPerms: async () => {
        seenMidWrite.push(await read(dir, 'a'), await read(dir, 'b'));
      },
    });

    assert.deepEqual(seenMidWrite, ['old-a', 'old-b']);
    assert.deepEqual([await read(dir, 'a'), await read(dir, 'b')], ['new-a', 'new-b']);
  });

  it('leaves the old version in place and no partial version behind when a write fails', async () => {
    await writeAtomically({ targetDir: dir, payload: payloadOf({ a: 'A' }), now: NOW });
    const version = await fs.readlink(path.join(dir, '..data'));

    await assert.rejects(
      writeAtomically({
        targetDir: dir,
        payload: payloadOf({ a: 'B' }),
        now: NOW,
        setPerms: () => Promise.reject(new Error('chown failed')),
      }),
      /chown failed/,
    );

    assert.equal(await read(dir, 'a'), 'A');
    assert.deepEqual((await fs.readdir(dir)).sort(), ['..data', 'a', version].sort());
  });

  it('recreates a missing name link even when the contents are unchanged', async () => {
    await writeAtomically({ targetDir: dir, payload: payloadOf({ a: 'A' }), now: NOW });
    await fs.unlink(path.join(dir, 'a'));

    await writeAtomically({ targetDir: dir, payload: payloadOf({ a: 'A' }), now: NOW });

    assert.equal(await read(dir, 'a'), 'A');
  });

  it('removes version directories left behind by an interrupted write', async () => {
    await fs.mkdir(path.join(dir, '..2020_01_01_00_00_00.abc123'));
    await fs.symlink('..2020_01_01_00_00_00.abc123', path.join(dir, '..data_tmp'));

    await writeAtomically({ targetDir: dir, payload: payloadOf({ a: 'A' }), now: NOW });

    const version = await fs.readlink(path.join(dir, '..data'));
    assert.deepEqual((await fs.readdir(dir)).sort(), ['..data', 'a', version].sort());
  });
});

describe('cleanPayloadPath', () => {
  it('cleans redundant separators and dots', () => {
    assert.equal(cleanPayloadPath('a//b/./c'), 'a/b/c');
    assert.equal(cleanPayloadPath('./key'), 'key');
  });

  it('rejects paths that are absolute, step out, or use the reserved .. prefix', () => {
    for (const bad of ['', '/etc/passwd', '../x', 'a/../../x', '..data', '..2024_x/y']) {
      assert.throws(() => cleanPayloadPath(bad), /invalid path/, bad);
    }
  });

  it('rejects names longer than 255 bytes', () => {
    assert.throws(() => cleanPayloadPath('x'.repeat(256)), /longer than 255/);
  });
});
