/**
 * The TypeScript half of `npm run conformance` (run.sh calls it):
 *
 *   cli.ts select <dry-run report.json> [--focus <regex>] [--shard i/n]
 *       prints the exact-name focus regex for the chosen tests (stderr: how many)
 *   cli.ts summary <report.json>
 *       prints "<passed> passed, <failed> failed, <skipped> skipped" of one run
 *   cli.ts render <results root> <out.md> <command> [--control <control results root>]
 *                 [--node-suite <results root>] [--node-control <results root>]
 *       merges every <results root>/<run>/report.json (with its meta.json) into docs/conformance.md,
 *       the control runs on the kubelet node (run.sh --node kubelet) into its control section, and
 *       the node conformance suite's runs (run-node.sh, on nodelet and on the kubelet) into its own
 */
import { readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { mergeResults, parseGinkgoReport, type TestResult } from './ginkgo-report.js';
import { parsePatternNotes, renderConformance, type ControlInfo, type NodeSuiteInfo } from './markdown.js';
import { focusRegex, parseShard, selectShard } from './shard.js';

const HERE = import.meta.dirname;

/** What run.sh writes next to each report. */
interface RunMeta {
  readonly label: string;
  readonly commit: string;
  readonly kubernetesVersion: string;
  readonly date: string;
  readonly wallSeconds: number;
  readonly procs: number;
}

function option(args: readonly string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i < 0 ? undefined : args[i + 1];
}

function select(args: readonly string[]): void {
  const [report] = args;
  if (report === undefined) throw new Error('usage: select <report.json> [--focus re] [--shard i/n]');
  const parsed = parseGinkgoReport(readFileSync(report, 'utf8'));
  const listed = parsed.tests;
  const focus = option(args, '--focus');
  let names = listed.map((t) => t.name).filter((n) => focus === undefined || new RegExp(focus).test(n));
  const shard = option(args, '--shard');
  if (shard !== undefined) names = selectShard(names, parseShard(shard));
  process.stderr.write(`[conformance] ${names.length} of ${listed.length} in-scope tests selected\n`);
  process.stdout.write(`${focusRegex(names, parsed.suiteDescription)}\n`);
}

function tally(tests: readonly TestResult[]): string {
  const n = (o: TestResult['outcome']): number => tests.filter((t) => t.outcome === o).length;
  return `${n('passed')} passed, ${n('failed')} failed, ${n('skipped') + n('pending')} skipped`;
}

function summary(args: readonly string[]): void {
  const [report] = args;
  if (report === undefined) throw new Error('usage: summary <report.json>');
  process.stdout.write(`${tally(parseGinkgoReport(readFileSync(report, 'utf8')).tests)}\n`);
}

interface LoadedRun {
  readonly meta: RunMeta;
  readonly tests: readonly TestResult[];
  readonly setupFailures: readonly string[];
}

function loadRuns(root: string): LoadedRun[] {
  const runs: LoadedRun[] = [];
  for (const dir of readdirSync(root)) {
    const report = path.join(root, dir, 'report.json');
    const metaFile = path.join(root, dir, 'meta.json');
    if (!existsSync(report) || !existsSync(metaFile)) continue;
    const meta = JSON.parse(readFileSync(metaFile, 'utf8')) as RunMeta;
    runs.push({ meta, ...parseGinkgoReport(readFileSync(report, 'utf8')) });
  }
  return runs.sort((a, b) => a.meta.date.localeCompare(b.meta.date));
}

function runLine(run: LoadedRun): string {
  const ran = run.tests.filter((t) => t.outcome !== 'skipped');
  const m = run.meta;
  const wall = `${Math.floor(m.wallSeconds / 60)}m${String(m.wallSeconds % 60).padStart(2, '0')}s`;
  return `${m.label} (${m.date}, commit \`${m.commit}\`, ${m.procs} ginkgo procs): ${tally(ran)} of ${ran.length} selected, wall time ${wall}`;
}

function inScopeOf(listFile: string): { inScope?: number } {
  return existsSync(listFile) ? { inScope: parseGinkgoReport(readFileSync(listFile, 'utf8')).tests.length } : {};
}

const CONTROL_COMMAND = "npm run kubelet:up && npm run conformance -- --node kubelet --focus '<regex>'; npm run kubelet:down";

function loadControl(root: string | undefined): { control?: ControlInfo } {
  if (root === undefined || !existsSync(root)) return {};
  const runs = loadRuns(root);
  if (runs.length === 0) return {};
  return { control: { command: CONTROL_COMMAND, runs: runs.map(runLine), tests: mergeResults(runs.map((r) => r.tests)) } };
}

const NODE_COMMANDS = [
  'npm run conformance -- --suite node --shard i/n   # for i in 1..n: nodelet\'s node',
  "npm run kubelet:up && npm run conformance -- --suite node --node kubelet --focus '<regex>'; npm run kubelet:down",
];

function loadRunsIfAny(root: string | undefined): LoadedRun[] {
  return root === undefined || !existsSync(root) ? [] : loadRuns(root);
}

/** The node conformance suite's section, when either of its roots has a run. */
function loadNodeSuite(args: readonly string[]): { nodeSuite?: NodeSuiteInfo } {
  const root = option(args, '--node-suite');
  const runs = loadRunsIfAny(root);
  const controlRuns = loadRunsIfAny(option(args, '--node-control'));
  if (runs.length === 0 && controlRuns.length === 0) return {};
  const latest = runs.at(-1);
  return {
    nodeSuite: {
      commands: NODE_COMMANDS,
      runs: runs.map(runLine),
      controlRuns: controlRuns.map(runLine),
      tests: mergeResults(runs.map((r) => r.tests)),
      controlTests: mergeResults(controlRuns.map((r) => r.tests)),
      ...(root === undefined || latest === undefined ? {} : inScopeOf(path.join(root, latest.meta.label, 'list.json'))),
      exclusions: parsePatternNotes(readFileSync(path.join(HERE, 'node-exclusions.txt'), 'utf8')),
      causes: parsePatternNotes(readFileSync(path.join(HERE, 'node-causes.txt'), 'utf8')),
    },
  };
}

function render(args: readonly string[]): void {
  const [root, out, command] = args;
  if (root === undefined || out === undefined || command === undefined) throw new Error('usage: render <results root> <out.md> <command>');
  const runs = loadRuns(root);
  const latest = runs.at(-1);
  if (latest === undefined) throw new Error(`no runs with report.json and meta.json under ${root}`);
  const tests = mergeResults(runs.map((r) => r.tests));
  const passedLater = new Set(tests.filter((t) => t.outcome === 'passed').map((t) => t.name));
  const fixedSince = mergeResults(runs.map((r) => r.tests.filter((t) => t.outcome === 'failed' && passedLater.has(t.name))));
  const page = renderConformance(tests, {
    kubernetesVersion: latest.meta.kubernetesVersion,
    commit: [...new Set(runs.map((r) => r.meta.commit))].join('`, `'),
    date: latest.meta.date.slice(0, 10),
    command,
    exclusions: parsePatternNotes(readFileSync(path.join(HERE, 'exclusions.txt'), 'utf8')),
    causes: parsePatternNotes(readFileSync(path.join(HERE, 'causes.txt'), 'utf8')),
    setupFailures: runs.flatMap((r) => r.setupFailures.map((f) => `${r.meta.label}: ${f}`)),
    runs: runs.map(runLine),
    fixedSince,
    ...inScopeOf(path.join(root, latest.meta.label, 'list.json')),
    ...loadControl(option(args, '--control')),
    ...loadNodeSuite(args),
  });
  writeFileSync(out, page);
  process.stderr.write(`[conformance] wrote ${out} from ${runs.length} run(s): ${tally(tests)}\n`);
}

const commands: Readonly<Record<string, (args: readonly string[]) => void>> = { select, summary, render };
const [cmd, ...rest] = process.argv.slice(2);
const command = cmd === undefined ? undefined : commands[cmd];
if (command === undefined) {
  process.stderr.write('usage: cli.ts select|summary|render ...\n');
  process.exit(2);
}
command(rest);
