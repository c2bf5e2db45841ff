/**
 * Env files as the kubelet reads them for `fileKeyRef`: the format (the cases of the kubelet's
 * env_util_test.go, read for semantics), long lines, and a join that never leaves the volume
 * through a symlink a container planted (real files in a temporary directory).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { mkdtemp, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { EnvFileError, fileLines, lookupEnvFileKey, secureJoin } from './env-file.js';

function linesOf(text: string): AsyncIterable<string> {
  const lines = text.split('\n');
  return {
    [Symbol.asyncIterator]: () => {
      let next = 0;
      return { next: () => Promise.resolve(next < lines.length ? { done: false, value: lines[next++] ?? '' } : { done: true, value: undefined }) };
    },
  };
}

const lookup = (text: string, key: string): Promise<string | undefined> => lookupEnvFileKey(linesOf(text), key);

describe('env file format', () => {
  const found: { name: string; text: string; key: string; want: string | undefined }[] = [
    { name: 'a quoted value', text: "A='one'\nB='two'", key: 'B', want: 'two' },
    { name: 'leading blanks, comments and blank lines', text: "# header\n\n   \n  A='x' # trailing comment", key: 'A', want: 'x' },
    { name: 'literal content: no escapes, no expansion', text: "A='$HOME \\n \"q\"'", key: 'A', want: '$HOME \\n "q"' },
    { name: 'a value over several lines keeps its newlines', text: "A='first\n  second\n'\nB='b'", key: 'A', want: 'first\n  second\n' },
    { name: 'a later key after a multi-line value', text: "A='first\nsecond'\nB='b'", key: 'B', want: 'b' },
    { name: 'a blank after = makes the value empty', text: "A= 'ignored'", key: 'A', want: '' },
    { name: 'the first assignment wins', text: "A='1'\nA='2'", key: 'A', want: '1' },
    { name: 'lines after the key are not read', text: "A='1'\nnot an assignment", key: 'A', want: '1' },
    { name: 'a missing key', text: "A='1'", key: 'B', want: undefined },
  ];
  for (const c of found) {
    it(c.name, async () => { assert.equal(await lookup(c.text, c.key), c.want); });
  }

  const invalid: { name: string; text: string; error: RegExp }[] = [
    { name: "no '='", text: 'JUSTTEXT', error: /at line 1: missing '='/ },
    { name: 'an empty name', text: "='x'", error: /at line 1: empty variable name/ },
    { name: "whitespace before '='", text: "A ='x'", error: /at line 1: whitespace before '=' is not allowed/ },
    { name: 'an unquoted value', text: 'A=x', error: /at line 1: value must be enclosed in single quotes/ },
    { name: 'nothing after =', text: 'A=', error: /at line 1: value must be enclosed in single quotes/ },
    { name: 'double quotes', text: 'A="x"', error: /value must be enclosed in single quotes/ },
    { name: 'content after the closing quote', text: "\nA='x' y", error: /at line 2: unexpected content after closing quote/ },
    { name: 'an unclosed quote', text: "A='x\nB='y", error: /at line 2: unexpected content after closing quote/ },
    { name: 'an unclosed quote at the end', text: "B='b'\nA='x\nmore", error: /starting at line 2: unclosed single quote/ },
  ];
  for (const c of invalid) {
    it(`refuses ${c.name}`, async () => {
      await assert.rejects(lookup(c.text, 'Z'), (e: unknown) => e instanceof EnvFileError && c.error.test(e.message));
    });
  }
});

describe('env files on disk', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'env-file-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads lines, dropping a trailing carriage return, the last line without a newline', async () => {
    const file = path.join(dir, 'crlf.env');
    await writeFile(file, "A='1'\r\nB='2'");
    const lines: string[] = [];
    for await (const line of fileLines(file)) lines.push(line);
    assert.deepEqual(lines, ["A='1'", "B='2'"]);
  });

  it('refuses a line longer than 64 KiB without holding the whole file', async () => {
    const file = path.join(dir, 'long.env');
    await writeFile(file, `A='${'x'.repeat(200 * 1024)}'\n`);
    await assert.rejects(lookupEnvFileKey(fileLines(file), 'A'), (e: unknown) => e instanceof EnvFileError && e.message.includes('token too long'));
  });

  it('joins symlinks as if the volume were the root: absolute and .. targets stay inside', async () => {
    const volume = path.join(dir, 'volume');
    await mkdir(path.join(volume, 'sub'), { recursive: true });
    await symlink('/etc/passwd', path.join(volume, 'abs'));
    await symlink('../../../../../etc/passwd', path.join(volume, 'sub', 'up'));
    await symlink('sub', path.join(volume, 'rel'));
    assert.equal(await secureJoin(volume, 'abs'), path.join(volume, 'etc/passwd'));
    assert.equal(await secureJoin(volume, 'sub/up'), path.join(volume, 'etc/passwd'));
    assert.equal(await secureJoin(volume, '../../etc/passwd'), path.join(volume, 'etc/passwd'));
    assert.equal(await secureJoin(volume, 'rel/config.env'), path.join(volume, 'sub/config.env'));
  });

  it('gives up on a symlink loop', async () => {
    const volume = path.join(dir, 'loop');
    await mkdir(volume);
    await symlink('b', path.join(volume, 'a'));
    await symlink('a', path.join(volume, 'b'));
    await assert.rejects(secureJoin(volume, 'a'), (e: unknown) => e instanceof EnvFileError && e.message.includes('too many symlinks'));
  });
});
