import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { firstLine, isNotAGinkgoReportError, mergeResults, parseGinkgoReport, sigAndArea, type TestResult } from './ginkgo-report.js';
import { causeOf, controlSection, countBy, isBadNoteLineError, nodeSuiteSection, parsePatternNotes, renderConformance, verdict } from './markdown.js';

const NS = 1e9;

function spec(containers: string[], leaf: string, state: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { ContainerHierarchyTexts: containers, LeafNodeText: leaf, LeafNodeType: 'It', State: state, RunTime: 2 * NS, ...extra };
}

const report = JSON.stringify([
  {
    SuiteDescription: 'Kubernetes e2e suite',
    SpecReports: [
      { LeafNodeType: 'SynchronizedBeforeSuite', State: 'passed' },
      spec(['[sig-node] Pods'], 'should get a host IP [NodeConformance]', 'passed'),
      spec(['[sig-node] Probing container'], 'should be restarted [NodeConformance]', 'failed', {
        Failure: {
          Message: '\ntimed out waiting for the condition\nmore detail',
          Location: { FileName: '/root/go/pkg/mod/k8s.io/kubernetes@v1.36.3/test/e2e/common/node/container_probe.go', LineNumber: 42 },
        },
      }),
      spec(['[sig-storage] ConfigMap'], 'should be consumable [NodeConformance]', 'skipped', { Failure: { Message: 'Only supported for providers [gce]' } }),
      spec(['[sig-apps] Deployment'], 'not selected by focus', 'skipped'),
      spec(['[sig-node] Pods'], 'should be deleted', 'timedout', { Failure: { Message: 'timed out' } }),
      spec(['Untagged'], 'x', 'passed'),
    ],
  },
]);

describe('parseGinkgoReport', () => {
  const parsed = parseGinkgoReport(report);
  it('keeps the It nodes of the run only (not setup nodes, not tests focus left out), named by containers and leaf joined by spaces', () => {
    assert.equal(parsed.suiteDescription, 'Kubernetes e2e suite');
    assert.equal(parsed.tests.length, 5);
    assert.equal(parsed.tests[0]?.name, '[sig-node] Pods should get a host IP [NodeConformance]');
  });
  it('leaves unnamed containers out of the name, as ginkgo\u2019s Spec.Text() that --focus matches', () => {
    const unnamed = parseGinkgoReport(JSON.stringify([{ SuiteDescription: 'E2eNode Suite', SpecReports: [spec(['[sig-node] Pod SIGKILL [LinuxOnly]', ''], 'The containers terminated forcefully', 'passed')] }]));
    assert.equal(unnamed.tests[0]?.name, '[sig-node] Pod SIGKILL [LinuxOnly] The containers terminated forcefully');
  });
  it('splits the top container into SIG and area', () => {
    assert.deepEqual(
      parsed.tests.map((t) => `${t.sig}/${t.area}`),
      ['sig-node/Pods', 'sig-node/Probing container', 'sig-storage/ConfigMap', 'sig-node/Pods', 'unknown/Untagged'],
    );
    assert.deepEqual(sigAndArea('[sig-api-machinery] Watchers'), { sig: 'sig-api-machinery', area: 'Watchers' });
  });
  it('counts every non-pass, non-skip state as a failure, with the first non-empty message line and a short location', () => {
    const failed = parsed.tests.filter((t) => t.outcome === 'failed');
    assert.deepEqual(
      failed.map((t) => [t.failure, t.location]),
      [
        ['timed out waiting for the condition', 'test/e2e/common/node/container_probe.go:42'],
        ['timed out', undefined],
      ],
    );
    assert.equal(parsed.tests[0]?.seconds, 2);
    assert.equal(parsed.tests[2]?.failure, 'Only supported for providers [gce]', 'a self-skip keeps its reason');
  });
  it('reports a failed setup node apart from the tests', () => {
    const r = parseGinkgoReport(JSON.stringify([{ SpecReports: [{ LeafNodeType: 'SynchronizedBeforeSuite', State: 'failed', Failure: { Message: 'node not ready' } }] }]));
    assert.deepEqual(r, { suiteDescription: '', tests: [], setupFailures: ['SynchronizedBeforeSuite: node not ready'] });
  });
  it('refuses what is not a report with NotAGinkgoReportError', () => {
    assert.throws(() => parseGinkgoReport('{"SpecReports":[]}'), isNotAGinkgoReportError);
  });
});

function result(name: string, outcome: TestResult['outcome']): TestResult {
  return { name, sig: 'sig-node', area: 'Pods', outcome, seconds: 1 };
}

describe('firstLine', () => {
  it('keeps a telling first line alone, joins a short one with the next lines, and caps the length', () => {
    assert.equal(firstLine('\ntimed out waiting for the condition on pods\nmore'), 'timed out waiting for the condition on pods');
    assert.equal(firstLine('Expected\n    <string>: abc\nto contain substring\n    <string>: x'), 'Expected <string>: abc');
    assert.equal(firstLine('x'.repeat(300)).length, 200);
    assert.equal(firstLine(undefined), '(no message)');
  });
});

describe('mergeResults', () => {
  it('keeps the latest run of a test, but never lets a skip hide a run', () => {
    const shard1 = [result('a', 'failed'), result('b', 'skipped')];
    const shard2 = [result('a', 'skipped'), result('b', 'passed')];
    const rerunOfA = [result('a', 'passed'), result('b', 'skipped')];
    assert.deepEqual(mergeResults([shard1, shard2]).map((t) => `${t.name}:${t.outcome}`), ['a:failed', 'b:passed']);
    assert.deepEqual(mergeResults([shard1, shard2, rerunOfA]).map((t) => `${t.name}:${t.outcome}`), ['a:passed', 'b:passed']);
    assert.deepEqual(mergeResults([[result('c', 'skipped')]]).map((t) => t.outcome), ['skipped']);
  });
});

describe('pattern notes and the page', () => {
  const notes = parsePatternNotes('# comment\n\nDNS should .* | needs cluster DNS\n\\[sig-node\\] Pods should be deleted | a|b in regex | pod never goes\n');
  it('parses <regex> | <text>, splitting at the last " | "', () => {
    assert.deepEqual(notes, [
      { pattern: 'DNS should .*', note: 'needs cluster DNS' },
      { pattern: '\\[sig-node\\] Pods should be deleted | a|b in regex', note: 'pod never goes' },
    ]);
    assert.throws(() => parsePatternNotes('no bar here'), isBadNoteLineError);
  });
  it('finds the cause of a failure by the first matching pattern', () => {
    assert.equal(causeOf('[sig-node] Probing container x', [{ pattern: 'Probing', note: 'probe bug' }]), 'probe bug');
    assert.equal(causeOf('other', [{ pattern: 'Probing', note: 'probe bug' }]), 'not diagnosed yet');
  });
  it('counts by SIG and renders every failure with its message and cause, the exclusions and the commit', () => {
    const tests = parseGinkgoReport(report).tests;
    assert.deepEqual(countBy(tests, (t) => t.sig).map(([k, c]) => `${k}:${c.passed}/${c.failed}/${c.skipped}`), ['sig-node:1/2/0', 'sig-storage:0/0/1', 'unknown:1/0/0']);
    const page = renderConformance(tests, {
      kubernetesVersion: 'v1.36.3',
      commit: 'abc123',
      date: '2026-11-24',
      command: 'npm run conformance',
      exclusions: [{ pattern: 'DNS', note: 'no cluster DNS' }],
      causes: [{ pattern: 'Probing', note: 'probe restarts late' }],
      setupFailures: [],
      runs: ['shard-1-of-1: 2 passed'],
      inScope: 10,
      fixedSince: [{ name: '[sig-node] Probing container old', sig: 'sig-node', area: 'Probing container', outcome: 'failed', seconds: 1, failure: 'no event' }],
    });
    assert.match(page, /## Failed in an earlier run, passed in a later one\n\n\| test \| failure \(first line\) \| cause \|\n\|---\|---\|---\|\n\| \[sig-node\] Probing container old \| no event \| probe restarts late \|/);
    assert.match(page, /nodelet commit `abc123`/);
    assert.match(page, /\*\*2 of 4 tests that ran passed\*\* \(4 of the 10 in-scope tests ran/);
    assert.match(page, /\| \[sig-node\] Probing container should be restarted \[NodeConformance\] \| timed out waiting for the condition \(test\/e2e\/common\/node\/container_probe.go:42\) \| probe restarts late \|/);
    assert.match(page, /\| \[sig-node\] Pods should be deleted \| timed out \| not diagnosed yet \|/);
    assert.match(page, /\| `DNS` \| no cluster DNS \|/);
    assert.match(page, /\| sig-node \/ Pods \| 1 \| 1 \| 0 \|/);
    assert.match(page, /\| \*\*total\*\* \| \*\*2\*\* \| \*\*2\*\* \| \*\*1\*\* \|/);
  });
});

describe('the control section (the same tests on the kubelet)', () => {
  const failed = (name: string, failure: string): TestResult => ({ ...result(name, 'failed'), failure });
  const nodelet = [result('both pass', 'passed'), failed('both fail', 'nc: invalid option -- u'), failed('nodelet only', 'timed out'), result('kubelet fails', 'passed')];
  const kubelet = [result('both pass', 'passed'), failed('both fail', 'nc: invalid option -- u'), result('nodelet only', 'passed'), failed('kubelet fails', 'x'), result('not on nodelet', 'passed')];
  const control = { command: 'npm run conformance -- --node kubelet', runs: ['focus-1: 3 passed'], tests: kubelet };
  it('says "1 test ran" for a control of one test', () => {
    const one = { ...control, tests: [failed('both fail', 'nc: invalid option -- u')] };
    assert.ok(controlSection(one, nodelet).includes('**1 test ran on the kubelet: 0 passed; 1 failed on both nodes; 0 passed on the kubelet and failed on nodelet.**'));
  });
  it('names a pass on the kubelet that fails on nodelet a nodelet bug, and a failure on both not nodelet\'s', () => {
    assert.deepEqual(
      kubelet.map((t) => verdict(t, nodelet.find((n) => n.name === t.name))),
      ['same', 'fails on both: not nodelet', '**nodelet bug**: passes on the kubelet', 'fails on the kubelet only', 'not run on nodelet'],
    );
  });
  it('lists every test the control ran with its kubelet result beside its nodelet result, and counts them', () => {
    const lines = controlSection(control, nodelet);
    assert.equal(lines[0], '## Control: the same tests on the kubelet');
    assert.ok(lines.includes('- focus-1: 3 passed'));
    assert.ok(lines.includes('**5 tests ran on the kubelet: 3 passed; 1 failed on both nodes; 1 passed on the kubelet and failed on nodelet.**'));
    const rows = lines.filter((l) => l.startsWith('| ') && !l.startsWith('| test '));
    assert.deepEqual(rows, [
      '| both pass | passed | passed | same |',
      '| both fail | **failed**: nc: invalid option -- u | **failed**: nc: invalid option -- u | fails on both: not nodelet |',
      '| nodelet only | passed | **failed**: timed out | **nodelet bug**: passes on the kubelet |',
      '| kubelet fails | **failed**: x | passed | fails on the kubelet only |',
      '| not on nodelet | passed | not run | not run on nodelet |',
    ]);
  });
  it('is on the page only when there were control runs, after the failures', () => {
    const info = { kubernetesVersion: 'v1.36.3', commit: 'abc', date: '2026-11-24', command: 'c', exclusions: [], causes: [], setupFailures: [], runs: [] };
    assert.doesNotMatch(renderConformance(nodelet, info), /## Control/);
    const page = renderConformance(nodelet, { ...info, control });
    assert.match(page, /## Failures[\s\S]*## Control: the same tests on the kubelet[\s\S]*\| nodelet only \| passed \| \*\*failed\*\*: timed out \|/);
  });
});

describe('the node conformance section (e2e_node.test on one node)', () => {
  const failed = (name: string, failure: string): TestResult => ({ ...result(name, 'failed'), failure });
  const suite = {
    commands: ['npm run conformance -- --suite node'],
    runs: ['focus-1: 1 passed, 1 failed'],
    controlRuns: ['focus-1: 2 passed'],
    tests: [result('[sig-node] Pods a', 'passed'), failed('[sig-node] Pods b', 'condition: PodScheduled not found for pod')],
    controlTests: [result('[sig-node] Pods a', 'passed'), result('[sig-node] Pods b', 'passed'), result('[sig-node] Pods c', 'passed')],
    inScope: 416,
    exclusions: [{ pattern: 'Device Plugin Failures:', note: 'fixed socket path' }],
    causes: [{ pattern: 'Pods b', note: 'no PodScheduled' }],
  };
  it('counts nodelet and the kubelet, and shows the coverage of the in-scope tests', () => {
    const lines = nodeSuiteSection(suite);
    assert.equal(lines[0], '## Node conformance: `e2e_node.test` on one node');
    assert.ok(lines.includes('- nodelet: focus-1: 1 passed, 1 failed'));
    assert.ok(lines.includes('- kubelet: focus-1: 2 passed'));
    assert.ok(lines.includes('**nodelet: 1 of 2 tests that ran passed** (2 of the 416 in-scope tests ran; 414 are in shards not run yet); the kubelet: 3 of 3; 1 passed on the kubelet and failed on nodelet.'));
  });
  it('tells tests that skipped themselves from tests no run has reached', () => {
    const lines = nodeSuiteSection({ ...suite, tests: [...suite.tests, result('[sig-node] Mount d', 'skipped')], inScope: 4 });
    assert.ok(lines.some((l) => l.includes('(2 of the 4 in-scope tests ran; 1 skipped themselves; 1 are in shards not run yet)')), lines.find((l) => l.includes('in-scope')));
  });
  it('puts each test of either node in one row, with its cause on nodelet and its own exclusions', () => {
    const lines = nodeSuiteSection(suite);
    assert.ok(lines.includes('| [sig-node] Pods b | condition: PodScheduled not found for pod | no PodScheduled |'));
    assert.ok(lines.includes('| [sig-node] Pods b | passed | **failed**: condition: PodScheduled not found for pod | **nodelet bug**: passes on the kubelet |'));
    assert.ok(lines.includes('| [sig-node] Pods c | passed | not run | not run on nodelet |'));
    assert.ok(lines.includes('| `Device Plugin Failures:` | fixed socket path |'));
  });
  it('comes after the e2e.test page, only when the suite has runs', () => {
    const info = { kubernetesVersion: 'v1.37.2', commit: 'abc', date: '2026-12-07', command: 'c', exclusions: [], causes: [], setupFailures: [], runs: [] };
    assert.doesNotMatch(renderConformance([], info), /Node conformance/);
    assert.match(renderConformance([], { ...info, nodeSuite: suite }), /## Exclusions[\s\S]*## Node conformance: `e2e_node.test` on one node[\s\S]*### Exclusions/);
  });
});
