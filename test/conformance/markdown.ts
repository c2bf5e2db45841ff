/**
 * Renders docs/conformance.md from merged test results, the exclusions and the causes written by
 * hand for known failures. Pure: the caller reads the files and the git commit.
 */
import type { Outcome, TestResult } from './ginkgo-report.js';

/** One line of exclusions.txt or causes.txt: `<regex> | <text>`. */
export interface PatternNote {
  readonly pattern: string;
  readonly note: string;
}

/** Everything the page shows besides the results. */
export interface RunInfo {
  readonly kubernetesVersion: string;
  readonly commit: string;
  readonly date: string;
  readonly command: string;
  readonly exclusions: readonly PatternNote[];
  readonly causes: readonly PatternNote[];
  readonly setupFailures: readonly string[];
  /** Free-form lines about the runs (one per shard: counts and wall time). */
  readonly runs: readonly string[];
  /** How many tests are in scope (the dry run's list), when known: the page says how many ran. */
  readonly inScope?: number;
  /** Earlier failures of tests that passed in a later run (after a fix): shown with their cause. */
  readonly fixedSince?: readonly TestResult[];
  /** The control runs on the kubelet node, when there are any. */
  readonly control?: ControlInfo;
  /** The node conformance suite (`e2e_node.test`, run-node.sh), when it has runs. */
  readonly nodeSuite?: NodeSuiteInfo;
}

/**
 * The node conformance suite's runs: Kubernetes' `e2e_node.test` on one node of the cluster, nodelet's
 * and (the control) the kubelet's. Its own section of the page, after the e2e.test part.
 */
export interface NodeSuiteInfo {
  /** How to reproduce nodelet's runs and the control's. */
  readonly commands: readonly string[];
  /** One line per run on nodelet, then one per run on the kubelet (counts and wall time). */
  readonly runs: readonly string[];
  readonly controlRuns: readonly string[];
  /** Every test run on nodelet, and on the kubelet, merged over the runs. */
  readonly tests: readonly TestResult[];
  readonly controlTests: readonly TestResult[];
  /** How many tests are in scope (the latest dry run's list), when known. */
  readonly inScope?: number;
  /** test/conformance/node-exclusions.txt and node-causes.txt. */
  readonly exclusions: readonly PatternNote[];
  readonly causes: readonly PatternNote[];
}

/** The control: the same runner with every test pod on a kubelet node (`--node kubelet`). */
export interface ControlInfo {
  /** How to reproduce it. */
  readonly command: string;
  /** One line per control run (counts and wall time). */
  readonly runs: readonly string[];
  /** Every test the control ran, merged over its runs. */
  readonly tests: readonly TestResult[];
}

/** Thrown for a line of exclusions.txt or causes.txt that is not `<regex> | <text>`. */
export class BadNoteLineError extends Error {
  override readonly name = 'BadNoteLineError';
}

export function isBadNoteLineError(err: unknown): err is BadNoteLineError {
  return err instanceof BadNoteLineError;
}

/** Parses `<regex> | <text>` lines; `#` comments and blank lines are skipped. */
export function parsePatternNotes(text: string): PatternNote[] {
  const notes: PatternNote[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const bar = line.lastIndexOf(' | ');
    if (bar < 0) throw new BadNoteLineError(`expected '<regex> | <text>': ${line}`);
    notes.push({ pattern: line.slice(0, bar).trim(), note: line.slice(bar + 3).trim() });
  }
  return notes;
}

type Counts = Record<Outcome, number>;

function emptyCounts(): Counts {
  return { passed: 0, failed: 0, skipped: 0, pending: 0 };
}

/** Counts per key, keys sorted. */
export function countBy(tests: readonly TestResult[], key: (t: TestResult) => string): [string, Counts][] {
  const map = new Map<string, Counts>();
  for (const t of tests) {
    const k = key(t);
    const c = map.get(k) ?? emptyCounts();
    c[t.outcome] += 1;
    map.set(k, c);
  }
  return [...map.entries()].sort(([a], [b]) => a.localeCompare(b));
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\s+/g, ' ');
}

function countsTable(title: string, rows: [string, Counts][]): string[] {
  const total = emptyCounts();
  const lines = [`| ${title} | passed | failed | skipped |`, '|---|---:|---:|---:|'];
  for (const [k, c] of rows) {
    lines.push(`| ${cell(k)} | ${c.passed} | ${c.failed} | ${c.skipped + c.pending} |`);
    for (const o of Object.keys(total) as Outcome[]) total[o] += c[o];
  }
  lines.push(`| **total** | **${total.passed}** | **${total.failed}** | **${total.skipped + total.pending}** |`);
  return lines;
}

/** The hand-written cause of a failing test: the first causes.txt pattern its name matches. */
export function causeOf(name: string, causes: readonly PatternNote[]): string {
  return causes.find((c) => new RegExp(c.pattern).test(name))?.note ?? 'not diagnosed yet';
}

function failuresSection(tests: readonly TestResult[], causes: readonly PatternNote[]): string[] {
  const failed = tests.filter((t) => t.outcome === 'failed');
  if (failed.length === 0) return ['No test failed.'];
  const lines = ['| test | failure (first line) | cause |', '|---|---|---|'];
  for (const t of failed) {
    const where = t.location === undefined ? '' : ` (${t.location})`;
    lines.push(`| ${cell(t.name)} | ${cell((t.failure ?? '') + where)} | ${cell(causeOf(t.name, causes))} |`);
  }
  return lines;
}

function outcomeCell(t: TestResult | undefined): string {
  if (t === undefined) return 'not run';
  return t.outcome === 'failed' ? `**failed**: ${t.failure ?? ''}` : t.outcome;
}

/** What a pair of results says: a pass on the kubelet only points at nodelet. */
export function verdict(kubelet: TestResult, nodelet: TestResult | undefined): string {
  if (nodelet === undefined) return 'not run on nodelet';
  if (kubelet.outcome === nodelet.outcome) return kubelet.outcome === 'failed' ? 'fails on both: not nodelet' : 'same';
  if (kubelet.outcome === 'passed' && nodelet.outcome === 'failed') return '**nodelet bug**: passes on the kubelet';
  return kubelet.outcome === 'failed' ? 'fails on the kubelet only' : 'differs';
}

/** The control section: each test the control ran, its kubelet result beside nodelet's. */
export function controlSection(control: ControlInfo, nodelet: readonly TestResult[]): string[] {
  const byName = new Map(nodelet.map((t) => [t.name, t]));
  const rows = control.tests.map((t) => ({ t, n: byName.get(t.name) }));
  const bugs = rows.filter(({ t, n }) => verdict(t, n).includes('nodelet bug')).length;
  const both = rows.filter(({ t, n }) => t.outcome === 'failed' && n?.outcome === 'failed').length;
  return [
    '## Control: the same tests on the kubelet',
    '',
    'The same runner and test images with every test pod on a node run by the upstream kubelet of the same release (`npm run kubelet:up`: its own containerd, CNI bridge and cgroup root on this host); nodelet\'s node is cordoned for the run. A test that fails on the kubelet too is a harness, test-image or host problem, not nodelet\'s; one that passes there and fails on nodelet is a nodelet bug.',
    '',
    '```sh',
    control.command,
    '```',
    '',
    ...control.runs.map((r) => `- ${r}`),
    '',
    `**${rows.length} ${rows.length === 1 ? 'test' : 'tests'} ran on the kubelet: ${rows.filter(({ t }) => t.outcome === 'passed').length} passed; ${both} failed on both nodes; ${bugs} passed on the kubelet and failed on nodelet.**`,
    '',
    '| test | kubelet | nodelet | verdict |',
    '|---|---|---|---|',
    ...rows.map(({ t, n }) => `| ${cell(t.name)} | ${cell(outcomeCell(t))} | ${cell(outcomeCell(n))} | ${verdict(t, n)} |`),
    '',
  ];
}

/** The node conformance section: nodelet's results, the kubelet's beside them, the exclusions. */
export function nodeSuiteSection(suite: NodeSuiteInfo): string[] {
  const ran = suite.tests.filter((t) => t.outcome !== 'skipped' && t.outcome !== 'pending');
  const controlRan = suite.controlTests.filter((t) => t.outcome !== 'skipped' && t.outcome !== 'pending');
  const byName = new Map(suite.tests.map((t) => [t.name, t]));
  const controlByName = new Map(suite.controlTests.map((t) => [t.name, t]));
  const names = [...new Set([...byName.keys(), ...controlByName.keys()])].sort((a, b) => a.localeCompare(b));
  const rows = names.map((name) => {
    const k = controlByName.get(name);
    const n = byName.get(name);
    return `| ${cell(name)} | ${cell(outcomeCell(k))} | ${cell(outcomeCell(n))} | ${k === undefined ? 'not run on the kubelet' : verdict(k, n)} |`;
  });
  const bugs = names.filter((name) => {
    const k = controlByName.get(name);
    return k !== undefined && verdict(k, byName.get(name)).includes('nodelet bug');
  }).length;
  return [
    '## Node conformance: `e2e_node.test` on one node',
    '',
    'Kubernetes\' node conformance test: the `[NodeConformance]` tests of `test/e2e_node`, run by `e2e_node.test` of the same release (built from the Go module proxy) in its existing-node mode (`--start-services=false --stop-services=false --prepull-images=false`, as upstream\'s node conformance image runs it without a kubelet of its own): it starts, restarts and reconfigures nothing, and tests the agent that runs. It assumes a one-node cluster: test/conformance/one-node-proxy.ts shows it the API server with only the node under test (nodelet\'s `vm`, or the kubelet\'s in the control), and every test pod names that node. Out of scope as in the e2e.test part (`[Serial]`, `[Disruptive]`, `[Slow]`, `[Flaky]`, `[Feature:…]`, `[Alpha]`, `[Beta]`: every test that restarts or reconfigures the kubelet, or needs systemd, carries one of them), and the exclusions below.',
    '',
    '```sh',
    ...suite.commands,
    '```',
    '',
    ...suite.runs.map((r) => `- nodelet: ${r}`),
    ...suite.controlRuns.map((r) => `- kubelet: ${r}`),
    '',
    `**nodelet: ${ran.filter((t) => t.outcome === 'passed').length} of ${ran.length} tests that ran passed**${coverage(ran.length, suite.inScope, suite.tests.length)}; the kubelet: ${controlRan.filter((t) => t.outcome === 'passed').length} of ${controlRan.length}; ${bugs} passed on the kubelet and failed on nodelet.`,
    '',
    '### By area (nodelet)',
    '',
    ...countsTable('SIG / area', countBy(suite.tests, (t) => `${t.sig} / ${t.area}`)),
    '',
    '### Failures on nodelet',
    '',
    ...failuresSection(suite.tests, suite.causes),
    '',
    '### nodelet beside the kubelet',
    '',
    '| test | kubelet | nodelet | verdict |',
    '|---|---|---|---|',
    ...rows,
    '',
    '### Exclusions',
    '',
    'In-scope node conformance tests this harness cannot run (test/conformance/node-exclusions.txt):',
    '',
    '| test (regex) | reason |',
    '|---|---|',
    ...suite.exclusions.map((e) => `| \`${cell(e.pattern)}\` | ${cell(e.note)} |`),
    '',
  ];
}

/**
 * How much of the in-scope list ran: `listed` counts the tests some run reports (those that skipped
 * themselves, e2eskipper's missing capability, included); the rest were never in a run.
 */
function coverage(ran: number, inScope: number | undefined, listed = ran): string {
  if (inScope === undefined || ran >= inScope) return '';
  const selfSkipped = listed - ran;
  const neverRun = inScope - listed;
  const parts = [
    ...(selfSkipped > 0 ? [`${selfSkipped} skipped themselves`] : []),
    ...(neverRun > 0 ? [`${neverRun} are in shards not run yet`] : []),
  ];
  return ` (${ran} of the ${inScope} in-scope tests ran; ${parts.join('; ')})`;
}

/** The whole page. */
export function renderConformance(tests: readonly TestResult[], info: RunInfo): string {
  const ran = tests.filter((t) => t.outcome !== 'skipped' && t.outcome !== 'pending');
  const passed = ran.filter((t) => t.outcome === 'passed').length;
  const out = [
    '# Upstream Kubernetes e2e tests against nodelet',
    '',
    '<!-- Generated by `npm run conformance` (test/conformance/cli.ts render) from the JSON reports of a real run: do not edit by hand; edit test/conformance/causes.txt and exclusions.txt instead. -->',
    '',
    `Kubernetes \`e2e.test\` ${info.kubernetesVersion} (built from the Go module proxy), run against nodelet commit \`${info.commit}\` on the one-node test cluster, ${info.date}.`,
    `**${passed} of ${ran.length} tests that ran passed**${coverage(ran.length, info.inScope)}.`,
    '',
    'Reproduce (the cluster must be up; each shard is one short hold of the shared cluster):',
    '',
    '```sh',
    info.command,
    '```',
    '',
    '## Runs',
    '',
    'A later run of a test replaces an earlier one in the counts; earlier failures of tests that passed later are listed after the failures.',
    '',
    ...info.runs.map((r) => `- ${r}`),
    '',
    '## By SIG',
    '',
    ...countsTable('SIG', countBy(tests, (t) => t.sig)),
    '',
    '## By area',
    '',
    ...countsTable('SIG / area', countBy(tests, (t) => `${t.sig} / ${t.area}`)),
    '',
    '## Failures',
    '',
    ...failuresSection(tests, info.causes),
    '',
  ];
  if (info.control !== undefined) out.push(...controlSection(info.control, tests));
  if ((info.fixedSince ?? []).length > 0) {
    out.push('## Failed in an earlier run, passed in a later one', '', ...failuresSection(info.fixedSince ?? [], info.causes), '');
  }
  if (info.setupFailures.length > 0) {
    out.push('## Suite setup failures', '', ...info.setupFailures.map((f) => `- ${cell(f)}`), '');
  }
  out.push(
    '## Exclusions',
    '',
    'In-scope tests (`[NodeConformance]`, `[sig-node] … [Conformance]`, `[sig-storage] … [NodeConformance]`, without `[Serial]`, `[Disruptive]`, `[Slow]`, `[Flaky]`, `[Feature:…]`, `[Alpha]`, `[Beta]`) skipped because a one-node cluster without kube-proxy, cluster DNS or a reachable registry cannot have what they need (test/conformance/exclusions.txt):',
    '',
    '| test (regex) | reason |',
    '|---|---|',
    ...info.exclusions.map((e) => `| \`${cell(e.pattern)}\` | ${cell(e.note)} |`),
    '',
  );
  if (info.nodeSuite !== undefined) out.push(...nodeSuiteSection(info.nodeSuite));
  return out.join('\n');
}
