/**
 * What one rotation of a container log does to the files beside it, as a pure function of their
 * names (the kubelet's container log manager, `pkg/kubelet/logs`): the runtime writes `<n>.log`;
 * rotated files are `<n>.log.<YYYYMMDD-HHMMSS>`, compressed ones `<n>.log.<YYYYMMDD-HHMMSS>.gz`.
 *
 * 1. Leftovers of an interrupted rotation go: `.tmp` files (a compression that did not finish) and
 *    an uncompressed file whose `.gz` exists (compressed, not yet removed).
 * 2. The oldest rotated files go until `maxFiles - 2` are left: the file about to be rotated and
 *    the fresh one the runtime opens make `maxFiles`. Oldest first, so a reader of the newest is
 *    not cut short.
 * 3. Every kept rotated file that is not compressed yet is gzipped.
 * 4. The current file is renamed to `<n>.log.<timestamp>` (left uncompressed: the runtime may
 *    still hold it open for a moment, and a log shipper may still be reading it).
 *
 * After a rotation there are at most `maxFiles` files: `maxFiles - 2` compressed, one uncompressed
 * rotated file, and the current one.
 */

/** Suffix of a compressed rotated log. */
export const COMPRESSED_SUFFIX = '.gz';
/** Suffix of a compression in progress. */
export const TEMPORARY_SUFFIX = '.tmp';

/** The rotated file's suffix for a moment, in local time as the kubelet's (Go `20060102-150405`). */
export function rotationTimestamp(date: Date): string {
  const two = (n: number): string => String(n).padStart(2, '0');
  const day = `${date.getFullYear()}${two(date.getMonth() + 1)}${two(date.getDate())}`;
  return `${day}-${two(date.getHours())}${two(date.getMinutes())}${two(date.getSeconds())}`;
}

/** Inputs of {@link planRotation}. */
export interface RotationInput {
  /** The current log's file name, e.g. `0.log`. */
  readonly logName: string;
  /** Names of every file in the log's directory (others than the log's are ignored). */
  readonly siblings: readonly string[];
  /** Files kept per container, the current one included (at least 2). */
  readonly maxFiles: number;
  /** {@link rotationTimestamp} of now. */
  readonly timestamp: string;
}

/** The steps of one rotation, in order; every name is a file name in the log's directory. */
export interface RotationPlan {
  /** Step 1: leftovers of an interrupted rotation. */
  readonly removeUnused: readonly string[];
  /** Step 2: the oldest rotated files beyond `maxFiles - 2`. */
  readonly removeExcess: readonly string[];
  /** Step 3: kept rotated files to gzip (to `<name>.gz`, then removed). */
  readonly compress: readonly string[];
  /** Step 4: the name the current file is renamed to. */
  readonly rotateTo: string;
}

/** Whether a rotated file is still part of the log (the kubelet's `isInUse`). */
function inUse(name: string, all: ReadonlySet<string>): boolean {
  if (name.endsWith(TEMPORARY_SUFFIX)) return false;
  if (name.endsWith(COMPRESSED_SUFFIX)) return true;
  return !all.has(`${name}${COMPRESSED_SUFFIX}`);
}

/**
 * Plans one rotation. Undefined when the name the current file would get (or its `.gz`) is taken,
 * i.e. the log was rotated less than a second ago: renaming onto it would lose that file, so the
 * rotation waits for the next round (the kubelet, checking every 10 s, never meets this).
 */
export function planRotation(input: RotationInput): RotationPlan | undefined {
  const prefix = `${input.logName}.`;
  const rotated = input.siblings.filter((name) => name.startsWith(prefix));
  const rotateTo = `${prefix}${input.timestamp}`;
  if (rotated.includes(rotateTo) || rotated.includes(`${rotateTo}${COMPRESSED_SUFFIX}`)) return undefined;
  const all = new Set(rotated);
  const kept = rotated.filter((name) => inUse(name, all)).sort();
  const removeUnused = rotated.filter((name) => !inUse(name, all)).sort();
  const excess = Math.max(0, kept.length - Math.max(0, input.maxFiles - 2));
  return {
    removeUnused,
    removeExcess: kept.slice(0, excess),
    compress: kept.slice(excess).filter((name) => !name.endsWith(COMPRESSED_SUFFIX)),
    rotateTo,
  };
}
