/**
 * `env[].valueFrom.fileKeyRef` (the kubelet's EnvFiles, beta and on since 1.35): a variable's value
 * read, when the container starts, from a file in one of the pod's emptyDir volumes, typically
 * written there by an init container.
 *
 * The file's format is the kubelet's (`pkg/kubelet/util/env.ParseEnv`), a strict subset of POSIX
 * shell: `NAME='value'` lines, the value always in single quotes and taken literally (no escapes,
 * no expansion, newlines kept inside the quotes), `#` comments on their own line or after the
 * closing quote, blank lines and leading blanks ignored. A blank right after `=` makes the value
 * empty. Anything else is an error. The first assignment of the key wins; lines after it are not
 * read.
 *
 * The path is joined to the volume as the kubelet's `securejoin.SecureJoin` does: symlinks that a
 * container planted in the volume are resolved as if the volume were `/`, so the agent (root on the
 * host) never reads a file outside it. As in the kubelet, the join and the read are two steps.
 * Lines longer than 64 KiB are an error (Go's bufio.Scanner limit), so a pod cannot make the agent
 * hold a huge line in memory.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { hasErrorCode } from '../volumes/fs-util.js';

/** The longest line read (Go's bufio.MaxScanTokenSize). */
const MAX_LINE_BYTES = 64 * 1024;
/** Symlinks followed in one join before giving up (securejoin's limit). */
const MAX_SYMLINKS = 255;

/** The env file could not be read or is not in the kubelet's format. */
export class EnvFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EnvFileError';
  }
}

function formatError(line: number, detail: string): EnvFileError {
  return new EnvFileError(`invalid environment variable format at line ${line}: ${detail}`);
}

/** What one `NAME=...` line holds before its value is read. */
interface Assignment {
  readonly name: string;
  /** Text after `=`, or undefined when a blank follows `=` (the value is empty). */
  readonly quoted: string | undefined;
}

function assignmentOf(line: string, lineNumber: number): Assignment {
  const eq = line.indexOf('=');
  if (eq === -1) throw formatError(lineNumber, "missing '='");
  const namePart = line.slice(0, eq);
  const name = namePart.replace(/[ \t]+$/, '');
  if (name === '') throw formatError(lineNumber, 'empty variable name');
  if (name !== namePart) throw formatError(lineNumber, "whitespace before '=' is not allowed");
  const valuePart = line.slice(eq + 1);
  if (/^[ \t]/.test(valuePart)) return { name, quoted: undefined };
  if (!valuePart.startsWith("'")) throw formatError(lineNumber, 'value must be enclosed in single quotes');
  return { name, quoted: valuePart.slice(1) };
}

function checkAfterQuote(rest: string, lineNumber: number): void {
  const after = rest.replace(/^[ \t]+/, '');
  if (after !== '' && !after.startsWith('#')) throw formatError(lineNumber, 'unexpected content after closing quote');
}

/**
 * The value of `key` in an env file given line by line; undefined when the file does not assign it.
 * @throws EnvFileError when a line up to the key's is not in the format.
 */
export async function lookupEnvFileKey(lines: AsyncIterable<string>, key: string): Promise<string | undefined> {
  let lineNumber = 0;
  /** The assignment whose quoted value spans lines, and what it has so far. */
  let open: { name: string; value: string; startLine: number } | undefined;
  for await (const raw of lines) {
    lineNumber++;
    if (open !== undefined) {
      const close = raw.indexOf("'");
      if (close === -1) {
        open.value += `${raw}\n`;
        continue;
      }
      checkAfterQuote(raw.slice(close + 1), lineNumber);
      if (open.name === key) return open.value + raw.slice(0, close);
      open = undefined;
      continue;
    }
    const line = raw.replace(/^[ \t]+/, '');
    if (line === '' || line.startsWith('#')) continue;
    const { name, quoted } = assignmentOf(line, lineNumber);
    if (quoted === undefined) {
      if (name === key) return '';
      continue;
    }
    const close = quoted.indexOf("'");
    if (close === -1) {
      open = { name, value: `${quoted}\n`, startLine: lineNumber };
      continue;
    }
    checkAfterQuote(quoted.slice(close + 1), lineNumber);
    if (name === key) return quoted.slice(0, close);
  }
  if (open !== undefined) throw new EnvFileError(`invalid environment variable format starting at line ${open.startLine}: unclosed single quote`);
  return undefined;
}

/** The file's lines (without `\n` or a trailing `\r`), read in chunks, none longer than 64 KiB. */
export async function* fileLines(file: string): AsyncGenerator<string> {
  const handle = await fs.open(file, 'r');
  try {
    const decoder = new StringDecoder('utf8');
    const chunk = Buffer.alloc(MAX_LINE_BYTES);
    let pending = '';
    for (;;) {
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      pending += decoder.write(chunk.subarray(0, bytesRead));
      for (let nl = pending.indexOf('\n'); nl !== -1; nl = pending.indexOf('\n')) {
        yield pending.slice(0, nl).replace(/\r$/, '');
        pending = pending.slice(nl + 1);
      }
      if (Buffer.byteLength(pending) > MAX_LINE_BYTES) throw new EnvFileError(`error reading environment variable file "${file}": token too long`);
    }
    pending += decoder.end();
    if (pending !== '') yield pending.replace(/\r$/, '');
  } finally {
    await handle.close();
  }
}

async function readlinkIfSymlink(file: string): Promise<string | undefined> {
  try {
    const stat = await fs.lstat(file);
    return stat.isSymbolicLink() ? await fs.readlink(file) : undefined;
  } catch (error) {
    if (hasErrorCode(error, 'ENOENT') || hasErrorCode(error, 'ENOTDIR')) return undefined;
    throw error;
  }
}

/**
 * `unsafePath` joined under `root` with every symlink resolved as if `root` were `/` (securejoin's
 * semantics): `..` and absolute link targets never leave `root`. Missing elements are kept as they
 * are (the read that follows then fails).
 */
export async function secureJoin(root: string, unsafePath: string): Promise<string> {
  const todo = unsafePath.split('/');
  const resolved: string[] = [];
  let links = 0;
  while (todo.length > 0) {
    const element = todo.shift() ?? '';
    if (element === '' || element === '.') continue;
    if (element === '..') {
      resolved.pop();
      continue;
    }
    const target = await readlinkIfSymlink(path.join(root, ...resolved, element));
    if (target === undefined) {
      resolved.push(element);
      continue;
    }
    if (++links > MAX_SYMLINKS) throw new EnvFileError(`secure join of "${unsafePath}": too many symlinks`);
    if (target.startsWith('/')) resolved.length = 0;
    todo.unshift(...target.split('/'));
  }
  return path.join(root, ...resolved);
}
