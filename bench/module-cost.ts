/**
 * What loading @kubernetes/client-node costs a process before it does any work (`npm run
 * bench:modules`; not a test: it asserts nothing). The agent's resident set does not fall below
 * this floor whatever it does per pod, so the figures say how much of the RSS target (issue 12)
 * is within reach of per-pod work at all.
 *
 * Each sample is a fresh `node` with the agent's own heap flag (`--max-semi-space-size=2`) that
 * imports one variant, collects garbage twice and reports `process.memoryUsage()`:
 *
 * - `node`: nothing imported (the runtime's own floor);
 * - `client-node`: the package's index, as the agent imports it;
 * - `client-node, minified`: the same files with comments and whitespace removed by esbuild (a
 *   copy in a temporary directory), to show what the modules' source text alone costs; V8 keeps
 *   every loaded module's source for lazy compilation.
 *
 * Variants alternate within each round, the order rotated per round.
 *
 *   node --import tsx bench/module-cost.ts [--rounds 5]
 */
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { transform } from 'esbuild';
import { roundOrder, spread } from './compare.js';

const REPO_DIR = path.resolve(import.meta.dirname, '..');
const PACKAGE = '@kubernetes/client-node';
const MiB = 2 ** 20;
const run = promisify(execFile);

type Variant = 'node' | 'client-node' | 'client-node, minified';
const VARIANTS: readonly Variant[] = ['node', 'client-node', 'client-node, minified'];

interface MemorySample {
  readonly variant: Variant;
  readonly round: number;
  readonly rssMiB: number;
  readonly heapUsedMiB: number;
}

/** Copies the package into `dir/node_modules`, minified file by file; its dependencies are links to the repo's. */
async function minifiedCopy(dir: string): Promise<{ files: number; before: number; after: number }> {
  const modules = path.join(dir, 'node_modules');
  const target = path.join(modules, PACKAGE);
  await cp(path.join(REPO_DIR, 'node_modules', PACKAGE), target, { recursive: true });
  for (const entry of await readdir(path.join(REPO_DIR, 'node_modules'))) {
    if (entry === '@kubernetes') continue;
    await symlink(path.join(REPO_DIR, 'node_modules', entry), path.join(modules, entry));
  }
  let files = 0;
  let before = 0;
  let after = 0;
  for (const file of await readdir(target, { recursive: true })) {
    if (!file.endsWith('.js')) continue;
    const full = path.join(target, file);
    const source = await readFile(full, 'utf8');
    const { code } = await transform(source, { minifyWhitespace: true, legalComments: 'none' });
    await writeFile(full, code);
    files += 1;
    before += source.length;
    after += code.length;
  }
  return { files, before, after };
}

const CHILD = (specifier: string | undefined): string => `
${specifier === undefined ? '' : `await import(${JSON.stringify(specifier)});`}
globalThis.gc(); globalThis.gc();
const m = process.memoryUsage();
process.stdout.write(JSON.stringify({ rss: m.rss, heapUsed: m.heapUsed }));
`;

/** Where each variant's script lives: its import resolves from that directory's node_modules. */
interface Dirs {
  readonly plain: string;
  readonly minified: string;
}

async function measure(variant: Variant, round: number, dirs: Dirs): Promise<MemorySample> {
  const script = path.join(variant === 'client-node, minified' ? dirs.minified : dirs.plain, `${variant === 'node' ? 'bare' : 'import'}.mjs`);
  await writeFile(script, CHILD(variant === 'node' ? undefined : PACKAGE));
  const { stdout } = await run(process.execPath, ['--expose-gc', '--max-semi-space-size=2', script]);
  const usage = JSON.parse(stdout) as { rss: number; heapUsed: number };
  return { variant, round, rssMiB: usage.rss / MiB, heapUsedMiB: usage.heapUsed / MiB };
}

function spreadText(values: readonly number[]): string {
  const s = spread(values);
  return s === undefined ? '–' : `${s.min.toFixed(1)} / **${s.median.toFixed(1)}** / ${s.max.toFixed(1)}`;
}

/** Per variant: RSS and heap after GC, and the RSS above the bare `node` of the same round. */
function render(samples: readonly MemorySample[]): string {
  const rows = VARIANTS.map((variant) => {
    const own = samples.filter((s) => s.variant === variant);
    const above = own.map((s) => s.rssMiB - (samples.find((b) => b.variant === 'node' && b.round === s.round)?.rssMiB ?? Number.NaN));
    return `| ${variant} | ${own.length} | ${spreadText(own.map((s) => s.rssMiB))} | ${spreadText(above)} | ${spreadText(own.map((s) => s.heapUsedMiB))} |`;
  });
  return ['| variant | runs | RSS MiB (min / median / max) | RSS above bare node, same round | heap used MiB |', '| --- | --: | --: | --: | --: |', ...rows].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' } } });
  const rounds = Number.parseInt(values.rounds, 10);
  if (!Number.isInteger(rounds) || rounds < 3) throw new Error(`--rounds wants an integer of at least 3, got ${values.rounds}`);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'nodelet-module-cost-'));
  try {
    const dirs: Dirs = { plain: path.join(dir, 'plain'), minified: path.join(dir, 'minified') };
    await mkdir(dirs.plain);
    await symlink(path.join(REPO_DIR, 'node_modules'), path.join(dirs.plain, 'node_modules'));
    const copy = await minifiedCopy(dirs.minified);
    process.stderr.write(`minified copy: ${copy.files} files, source ${(copy.before / MiB).toFixed(1)} MiB → ${(copy.after / MiB).toFixed(1)} MiB\n`);
    const samples: MemorySample[] = [];
    for (let round = 1; round <= rounds; round++) {
      for (const variant of roundOrder(VARIANTS, round)) samples.push(await measure(variant, round, dirs));
    }
    process.stdout.write(`Node ${process.version}, ${PACKAGE}, ${rounds} rounds (node --expose-gc --max-semi-space-size=2; after two GCs)\n\n${render(samples)}\n`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
