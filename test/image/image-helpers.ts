/**
 * Shared by the image suite: runs `image/build.sh` (cached; a cold run builds) and reads what it
 * leaves next to the image tar: the file list of both layers, the base's Debian packages, the sizes.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const REPO_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The built image, as `image/build.sh` reports it. */
export interface BuiltImage {
  /** The full reference, e.g. docker.io/library/nodelet:0.1.0. */
  readonly ref: string;
  /** The OCI layout tar for `ctr images import`. */
  readonly tar: string;
  /** The manifest digest (sha256:...). */
  readonly digest: string;
  /** The config digest: the image ID the CRI reports (sha256:...). */
  readonly configDigest: string;
  /** Every path in the image (both layers), relative to `/`, without a leading `./`. */
  readonly files: ReadonlySet<string>;
  /** Debian package name → version, from the image's dpkg database. */
  readonly packages: ReadonlyMap<string, string>;
  /** Bytes: the gzip layers (what a registry stores) and the layer tars (what unpacks). */
  readonly sizes: { readonly compressed: number; readonly uncompressed: number };
  /** Seconds `image/build.sh` took in this call. */
  readonly buildSeconds: number;
}

/** Builds (or finds in the cache) nodelet's image and reads its file list. */
export async function buildImage(): Promise<BuiltImage> {
  const started = process.hrtime.bigint();
  const { stdout } = await run('bash', [path.join(REPO_DIR, 'image/build.sh')], {
    timeout: 15 * 60_000,
    maxBuffer: 1024 * 1024,
  });
  const buildSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  const [ref, tar, digest] = stdout.trim().split(' ');
  if (ref === undefined || tar === undefined || digest === undefined) {
    throw new Error(`image/build.sh printed no "<ref> <tar> <digest>" line: ${stdout}`);
  }
  const dir = path.dirname(tar);
  const files = new Set((await readFile(path.join(dir, 'files.txt'), 'utf8')).split('\n').filter((f) => f !== ''));
  const packages = new Map<string, string>();
  for (const line of (await readFile(path.join(dir, 'packages.txt'), 'utf8')).split('\n')) {
    const [name, version] = line.split(' ');
    if (name !== undefined && name !== '' && version !== undefined) {
      packages.set(name, version);
    }
  }
  const manifest = JSON.parse(
    await readFile(path.join(dir, 'layout/blobs/sha256', digest.replace('sha256:', '')), 'utf8'),
  ) as { config: { digest: string } };
  const sizes = JSON.parse(await readFile(path.join(dir, 'sizes.json'), 'utf8')) as BuiltImage['sizes'];
  return { ref, tar, digest, configDigest: manifest.config.digest, files, packages, sizes, buildSeconds };
}

/** Megabytes with one decimal, for printed figures. */
export function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

/** The pins of image/versions.env: what the image's node, containerd and runc must report. */
export interface ImagePins {
  readonly NODE_VERSION: string;
  readonly NODE_INTEGRITY: string;
  readonly CONTAINERD_VERSION: string;
  readonly RUNC_VERSION: string;
}

/** Reads image/versions.env (KEY=value lines; comments and blanks skipped). */
export async function imagePins(): Promise<ImagePins> {
  const text = await readFile(path.join(REPO_DIR, 'image/versions.env'), 'utf8');
  const values = new Map<string, string>();
  for (const line of text.split('\n')) {
    const match = /^([A-Z_]+)=(\S+)$/.exec(line.trim());
    if (match?.[1] !== undefined && match[2] !== undefined) values.set(match[1], match[2]);
  }
  const pin = (key: keyof ImagePins): string => {
    const value = values.get(key);
    if (value === undefined) throw new Error(`image/versions.env has no ${key}`);
    return value;
  };
  return {
    NODE_VERSION: pin('NODE_VERSION'),
    NODE_INTEGRITY: pin('NODE_INTEGRITY'),
    CONTAINERD_VERSION: pin('CONTAINERD_VERSION'),
    RUNC_VERSION: pin('RUNC_VERSION'),
  };
}
