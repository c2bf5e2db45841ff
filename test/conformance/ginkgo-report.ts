/**
 * Reads Ginkgo v2 JSON reports (`--json-report`, an array of suite reports) into one flat list of
 * test results. Only `It` nodes are tests; the suite's setup nodes (SynchronizedBeforeSuite, …)
 * are kept apart, because a failure there fails every test of the run.
 */

/** A test's outcome as Ginkgo names it, folded to the four that a report counts. */
export type Outcome = 'passed' | 'failed' | 'skipped' | 'pending';

/** One upstream test as one run saw it. */
export interface TestResult {
  /** The full name: container texts and the leaf text joined by spaces (what --focus matches). */
  readonly name: string;
  /** `sig-node` from a leading `[sig-node]`, else `unknown`. */
  readonly sig: string;
  /** The outermost container without its SIG tag, e.g. `Pods`, `Probing container`. */
  readonly area: string;
  readonly outcome: Outcome;
  /** First line of the failure message (failed tests), or of the reason a test skipped itself. */
  readonly failure?: string;
  /** Where the failure was raised, `file:line` (failed tests only). */
  readonly location?: string;
  readonly seconds: number;
}

/** What a report file holds: the tests and the setup-node failures. */
export interface ParsedReport {
  /** The suite's description (Ginkgo matches focus against "<description> <test name>"). */
  readonly suiteDescription: string;
  readonly tests: readonly TestResult[];
  readonly setupFailures: readonly string[];
}

interface RawSpec {
  readonly ContainerHierarchyTexts?: readonly string[] | null;
  readonly LeafNodeText?: string;
  readonly LeafNodeType?: string;
  readonly State?: string;
  readonly RunTime?: number;
  readonly Failure?: { readonly Message?: string; readonly Location?: { readonly FileName?: string; readonly LineNumber?: number } };
}

/** Thrown when a file is not a Ginkgo JSON report. */
export class NotAGinkgoReportError extends Error {
  override readonly name = 'NotAGinkgoReportError';
}

export function isNotAGinkgoReportError(err: unknown): err is NotAGinkgoReportError {
  return err instanceof NotAGinkgoReportError;
}

const SIG = /^\[(sig-[a-z0-9-]+)\]\s*/;

/** Splits a top-level container text into SIG and area. */
export function sigAndArea(top: string): { sig: string; area: string } {
  const m = SIG.exec(top);
  if (m?.[1] === undefined) return { sig: 'unknown', area: top.trim() || '(none)' };
  return { sig: m[1], area: top.slice(m[0].length).trim() || '(none)' };
}

const KEPT: ReadonlySet<string> = new Set(['passed', 'skipped', 'pending']);

/** failed, panicked, interrupted, aborted, timedout (and anything unknown): none of them is a pass. */
function outcomeOf(state: string | undefined): Outcome {
  return state !== undefined && KEPT.has(state) ? (state as Outcome) : 'failed';
}

/**
 * The failure's first non-empty line; when that says little ("Expected", a bare error type), the
 * next lines join it up to 200 characters, so the page still shows what was expected.
 */
export function firstLine(text: string | undefined): string {
  const lines = (text ?? '').split('\n').map((l) => l.trim()).filter((l) => l !== '');
  let line = lines.shift() ?? '(no message)';
  while (line.length < 20 && lines.length > 0) line += ` ${lines.shift() ?? ''}`;
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

function toResult(spec: RawSpec): TestResult {
  const containers = spec.ContainerHierarchyTexts ?? [];
  // Ginkgo's Spec.Text() leaves out empty node texts (an unnamed container): the name --focus
  // matches has no double space where one was.
  const name = [...containers, spec.LeafNodeText ?? ''].filter((t) => t !== '').join(' ');
  const { sig, area } = sigAndArea(containers[0] ?? '');
  const outcome = outcomeOf(spec.State);
  const seconds = (spec.RunTime ?? 0) / 1e9;
  if (outcome === 'skipped') return { name, sig, area, outcome, seconds, failure: firstLine(spec.Failure?.Message) };
  if (outcome !== 'failed') return { name, sig, area, outcome, seconds };
  const loc = spec.Failure?.Location;
  const location = loc?.FileName === undefined ? undefined : `${loc.FileName.replace(/^.*\/test\/e2e\//, 'test/e2e/')}:${loc.LineNumber ?? 0}`;
  return { name, sig, area, outcome, seconds, failure: firstLine(spec.Failure?.Message), ...(location === undefined ? {} : { location }) };
}

/** Parses the text of one `--json-report` file. */
export function parseGinkgoReport(text: string): ParsedReport {
  const data: unknown = JSON.parse(text);
  if (!Array.isArray(data)) throw new NotAGinkgoReportError('expected an array of suite reports');
  const tests: TestResult[] = [];
  const setupFailures: string[] = [];
  let suiteDescription = '';
  for (const suite of data as readonly { readonly SuiteDescription?: string; readonly SpecReports?: readonly RawSpec[] | null }[]) {
    if (typeof suite !== 'object' || suite === null) throw new NotAGinkgoReportError('a suite report is not an object');
    suiteDescription ||= suite.SuiteDescription ?? '';
    for (const spec of suite.SpecReports ?? []) {
      // A test left out by focus/skip is "skipped" without a message; one that skipped itself
      // (e2eskipper: a missing capability) says why. Only the latter belongs to the run.
      if (spec.LeafNodeType === 'It' && !(spec.State === 'skipped' && (spec.Failure?.Message ?? '') === '')) tests.push(toResult(spec));
      else if (outcomeOf(spec.State) === 'failed') setupFailures.push(`${spec.LeafNodeType ?? '?'}: ${firstLine(spec.Failure?.Message)}`);
    }
  }
  return { suiteDescription, tests, setupFailures };
}

/**
 * Merges the results of several runs (shards, re-runs of a focus): one entry per test name, the
 * latest run that did not skip it winning, so a shard that skipped a test (another shard's) never
 * hides the shard that ran it. Runs are given oldest first.
 */
export function mergeResults(runs: readonly (readonly TestResult[])[]): TestResult[] {
  const byName = new Map<string, TestResult>();
  for (const run of runs) {
    for (const t of run) {
      const seen = byName.get(t.name);
      if (seen === undefined || t.outcome !== 'skipped' || seen.outcome === 'skipped') byName.set(t.name, t);
    }
  }
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}
