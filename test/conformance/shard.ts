/**
 * Splits the in-scope tests into shards, so a long run becomes short holds of the shared cluster.
 * Ginkgo has no sharding of its own: the runner lists the in-scope tests (a dry run), picks one
 * shard here, and focuses the real run on exactly those names.
 */

/** Thrown for a `--shard` value that is not `i/n` with 1 ≤ i ≤ n. */
export class BadShardError extends Error {
  override readonly name = 'BadShardError';
}

export function isBadShardError(err: unknown): err is BadShardError {
  return err instanceof BadShardError;
}

export interface Shard {
  readonly index: number;
  readonly count: number;
}

/** Parses `i/n` (1-based). */
export function parseShard(text: string): Shard {
  const m = /^([1-9][0-9]*)\/([1-9][0-9]*)$/.exec(text.trim());
  if (m?.[1] === undefined || m[2] === undefined) throw new BadShardError(`shard must be i/n, got '${text}'`);
  const index = Number(m[1]);
  const count = Number(m[2]);
  if (index > count) throw new BadShardError(`shard ${index} of ${count} does not exist`);
  return { index, count };
}

/**
 * The names of shard i of n: the sorted, de-duplicated names dealt round-robin, so every shard gets
 * tests of every area (areas differ a lot in run time) and the split depends only on the list.
 */
export function selectShard(names: readonly string[], shard: Shard): string[] {
  const sorted = [...new Set(names)].sort();
  return sorted.filter((_, i) => i % shard.count === shard.index - 1);
}

/** Escapes a string for use inside a Go (RE2) regular expression. */
export function escapeRegex(text: string): string {
  return text.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&');
}

/**
 * A focus regex that matches exactly the given full test names (anchored, so a name that is a
 * prefix of another name does not pull the longer one into this shard). Ginkgo matches focus
 * against "<suite description> <test name>", so the suite's description (the report's
 * SuiteDescription) leads the anchor. Empty input gives a regex that matches nothing.
 */
export function focusRegex(names: readonly string[], suiteDescription: string): string {
  if (names.length === 0) return '^$nothing';
  return `^${escapeRegex(suiteDescription)} (${names.map(escapeRegex).join('|')})$`;
}
