/**
 * nodelet's own version as the Node reports it in `nodeInfo.kubeletVersion`: `v<package version>-nodelet`,
 * a valid semver that kubectl prints and that no one mistakes for a real kubelet release.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** No nodelet package.json above the running module: a broken install. */
export class PackageVersionNotFoundError extends Error {
  override readonly name = 'PackageVersionNotFoundError';
  constructor(readonly fromFile: string) {
    super(`no nodelet package.json above ${fromFile}`);
  }
}

/** True when `err` is a {@link PackageVersionNotFoundError}. */
export function isPackageVersionNotFoundError(err: unknown): err is PackageVersionNotFoundError {
  return err instanceof PackageVersionNotFoundError;
}

/** Formats the package version as the reported agent version. */
export function formatAgentVersion(packageVersion: string): string {
  return `v${packageVersion}-nodelet`;
}

function packageVersionAt(file: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
    if (typeof parsed !== 'object' || parsed === null) return undefined;
    if (!('name' in parsed) || parsed.name !== 'nodelet') return undefined;
    return 'version' in parsed && typeof parsed.version === 'string' ? parsed.version : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Version of the nodelet package this module belongs to, found by walking up from this file (the
 * same code runs from the source tree through tsx and from `dist/`, at different depths).
 */
export function nodeletPackageVersion(fromFile: string = fileURLToPath(import.meta.url)): string {
  let dir = path.dirname(fromFile);
  for (;;) {
    const version = packageVersionAt(path.join(dir, 'package.json'));
    if (version !== undefined) return version;
    const parent = path.dirname(dir);
    if (parent === dir) throw new PackageVersionNotFoundError(fromFile);
    dir = parent;
  }
}

/** The agent version reported on the Node, e.g. `v0.1.0-nodelet`. */
export function agentVersion(): string {
  return formatAgentVersion(nodeletPackageVersion());
}
