/**
 * Parses a Prometheus text exposition with the Prometheus project's own parser
 * (`promparse/main.go`, github.com/prometheus/common/expfmt), built once and cached by
 * `build-promparse.sh`. Rejects with the parser's message when the text does not parse.
 */
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const BUILD = path.join(import.meta.dirname, 'build-promparse.sh');

/** One series as the parser read it; numbers as Go writes them (`+Inf`, `NaN`). */
export interface ParsedSeries {
  readonly labels: Readonly<Record<string, string>>;
  readonly value?: string;
  readonly count?: number;
  readonly sum?: string;
  readonly buckets?: readonly { readonly le: string; readonly count: number }[];
}

/** Families by name: `COUNTER`, `GAUGE`, `HISTOGRAM`, … */
export type ParsedFamilies = Readonly<Record<string, { readonly type: string; readonly help: string; readonly series: readonly ParsedSeries[] }>>;

let binary: Promise<string> | undefined;

/** The parser's path (built on first use; the build takes a few seconds when not cached). */
export function promparseBinary(): Promise<string> {
  binary ??= run('bash', [BUILD], { timeout: 600_000 }).then(({ stdout }) => stdout.trim());
  return binary;
}

export async function parsePrometheus(text: string): Promise<ParsedFamilies> {
  const bin = await promparseBinary();
  return new Promise((resolve, reject) => {
    const child = spawn(bin, [], { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(JSON.parse(Buffer.concat(out).toString()) as ParsedFamilies);
      else reject(new Error(`promparse exited ${String(code)}: ${Buffer.concat(err).toString().trim()}`));
    });
    child.stdin.end(text);
  });
}

/** The value of the one series of `family` whose labels include `labels` (undefined when none). */
export function seriesValue(families: ParsedFamilies, family: string, labels: Readonly<Record<string, string>> = {}): ParsedSeries | undefined {
  return families[family]?.series.find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}
