/**
 * The agent's own Redis password: made once (256 random bits), kept on the host under the root dir
 * (0600), reused at every restart; only its SHA-256 leaves the host (redis-acl.ts).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** The password stored in `file`, made and stored first when there is none. */
export async function ensureNodeRedisPassword(file: string): Promise<string> {
  try {
    const stored = (await readFile(file, 'utf8')).trim();
    if (/^[0-9a-f]{64}$/.test(stored)) return stored;
  } catch (error) {
    if (!(error instanceof Error && 'code' in error && error.code === 'ENOENT')) throw error;
  }
  const password = randomBytes(32).toString('hex');
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  await writeFile(`${file}.tmp`, `${password}\n`, { mode: 0o600 });
  await rename(`${file}.tmp`, file);
  return password;
}

/** `redisUrl` with `user` and `password` as its credentials (any credentials it had are replaced). */
export function withRedisCredentials(redisUrl: string, user: string, password: string): string {
  const url = new URL(redisUrl);
  url.username = encodeURIComponent(user);
  url.password = encodeURIComponent(password);
  return url.toString();
}
