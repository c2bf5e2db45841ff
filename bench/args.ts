/** Command-line values of the benchmarks. */

/** A comma-separated list of positive integers (`--sizes 30,110`); throws naming the flag otherwise. */
export function positiveInts(text: string, flag: string): number[] {
  const values = text.split(',').map((v) => Number.parseInt(v.trim(), 10));
  if (values.some((v) => !Number.isInteger(v) || v <= 0)) throw new Error(`${flag} wants positive integers, got ${text}`);
  return values;
}
