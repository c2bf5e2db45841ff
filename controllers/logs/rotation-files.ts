/**
 * The file operations of a log rotation (`rotation-plan.ts` decides, this does). Only paths under
 * the pod log root are ever touched, so a log path a runtime reports elsewhere is left alone.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { COMPRESSED_SUFFIX, TEMPORARY_SUFFIX } from './rotation-plan.js';
import { isNotFound } from '../../reconcilers/model/container-logs.js';


/** Size of a file in bytes, undefined when it does not exist. */
export async function fileSize(file: string): Promise<number | undefined> {
  try {
    return (await stat(file)).size;
  } catch (err: unknown) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Names in a directory. */
export function listNames(dir: string): Promise<string[]> {
  return readdir(dir);
}

/** Removes a file; one already gone is fine. */
export async function removeFile(dir: string, name: string): Promise<void> {
  await rm(path.join(dir, name), { force: true });
}

/**
 * Gzips `<name>` to `<name>.gz` through `<name>.tmp` (renamed once complete, so a `.gz` is never
 * partial), then removes `<name>`. The temporary file is removed whatever happens.
 */
export async function compressFile(dir: string, name: string): Promise<void> {
  const source = path.join(dir, name);
  const temporary = `${source}${TEMPORARY_SUFFIX}`;
  try {
    const mode = (await stat(source)).mode & 0o777;
    await pipeline(createReadStream(source), createGzip(), createWriteStream(temporary, { mode }));
    await rename(temporary, `${source}${COMPRESSED_SUFFIX}`);
  } finally {
    await rm(temporary, { force: true });
  }
  await rm(source, { force: true });
}

/** Renames a file within its directory. */
export async function renameFile(dir: string, from: string, to: string): Promise<void> {
  await rename(path.join(dir, from), path.join(dir, to));
}
