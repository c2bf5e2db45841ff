/**
 * Reproducible randomness and the figures fault campaigns print: a seeded generator (mulberry32;
 * the same seed gives the same schedule of delays and victims) and min / median / max.
 */

/** The seed of a run: `FAULTS_SEED` when set (to repeat a run), else a fresh one. Printed by every test that uses it. */
export function runSeed(): number {
  const fromEnv = process.env.FAULTS_SEED;
  if (fromEnv !== undefined && fromEnv !== '') {
    const seed = Number.parseInt(fromEnv, 10);
    if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`FAULTS_SEED must be a non-negative integer, not '${fromEnv}'`);
    return seed >>> 0;
  }
  return Math.floor(Math.random() * 2 ** 32) >>> 0;
}

/** A seeded generator of numbers in [0, 1) with helpers for the schedule. */
export class SeededRandom {
  private state: number;

  constructor(readonly seed: number) {
    this.state = seed >>> 0;
  }

  /** The next number in [0, 1) (mulberry32). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max], both included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** `count` distinct items of `items` (fewer when it has fewer), in the order drawn. */
  pick<T>(items: readonly T[], count: number): T[] {
    const pool = [...items];
    const out: T[] = [];
    while (out.length < count && pool.length > 0) out.push(pool.splice(this.int(0, pool.length - 1), 1)[0]!);
    return out;
  }
}

/** `min a, median b, max c` of the values (the median of an even count is the lower middle one), in the unit given. */
export function minMedianMax(values: readonly number[], unit = 'ms'): string {
  if (values.length === 0) return 'no values';
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted[Math.floor((sorted.length - 1) / 2)]!;
  return `min ${sorted[0]!} ${unit}, median ${median} ${unit}, max ${sorted.at(-1)!} ${unit}`;
}
