import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatDuration, formatRelative, formatTime } from './format.js';
import { escapeHtml, html } from './html.js';
import { renderIndexPage, renderSearchPage } from './index-page.js';
import type { PodTimeline } from './pod-timeline.js';
import { overdueHint, renderTimelinePage } from './timeline-page.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const UID = '0d9e5c1a-0000-4000-8000-00000000abcd';

const timeline = (overrides: Partial<PodTimeline>): PodTimeline => ({
  uid: UID,
  names: ['shop/api-0'],
  nodes: ['n1'],
  rows: [],
  verdict: { kind: 'unknown' },
  untracedRuns: 0,
  ...overrides,
});

describe('html', () => {
  it('escapes interpolated text but not nested fragments', () => {
    const inner = html`<b>${'<i>'}</b>`;
    assert.equal(html`<p title="${'"x"'}">${inner}${['a&', 1]}${undefined}${false}</p>`.value, '<p title="&quot;x&quot;"><b>&lt;i&gt;</b>a&amp;1</p>');
    assert.equal(escapeHtml(`'`), '&#39;');
  });
});

describe('format', () => {
  it('renders durations at a useful precision', () => {
    assert.deepEqual(
      [850, 1234, 42_000, 185_000, 7_800_000].map(formatDuration),
      ['850 ms', '1.2 s', '42 s', '3 min 5 s', '2 h 10 min'],
    );
  });

  it('renders times in UTC and relative to now', () => {
    assert.equal(formatTime(T0 + 1500), '2030-01-01 00:00:01Z');
    assert.equal(formatRelative(T0 + 4000, T0), 'in 4.0 s');
    assert.equal(formatRelative(T0 - 90_000, T0), '1 min 30 s ago');
    assert.equal(formatRelative(T0 + 200, T0), 'now');
  });
});

describe('renderTimelinePage', () => {
  const failing = timeline({
    rows: [
      {
        kind: 'run',
        node: 'n1',
        queueName: 'nodelet-reconcile-n1',
        jobId: `${UID}.k1`,
        jobState: 'delayed',
        at: T0,
        reason: 'pod updated',
        run: 2,
        attempt: 2,
        outcome: 'error',
        durationMs: 120,
        nextRunAt: T0 + 2120,
        error: 'pull "evil<script>" failed',
      },
    ],
    verdict: { kind: 'retrying', failures: 2, error: 'pull failed', nextRunAt: T0 + 2120 },
  });

  it('shows each run with outcome, attempt, duration, next run and the escaped error, linked to its bull-board job', () => {
    const page = renderTimelinePage(failing, { nowMs: T0 + 1000, workers: new Map([['n1', 1]]) }).value;
    assert.match(page, /<h1>Pod shop\/api-0<\/h1>/);
    assert.match(page, /error \(attempt 2\)/);
    assert.match(page, /120 ms/);
    assert.match(page, /2030-01-01 00:00:02Z <span class="muted">\(in 1\.1 s\)/);
    assert.match(page, /pull &quot;evil&lt;script&gt;&quot; failed/);
    assert.doesNotMatch(page, /<script>/);
    assert.ok(page.includes(`href="/queues/queue/nodelet-reconcile-n1/${UID}.k1"`));
    assert.match(page, /2 consecutive failed reconciles; next attempt in 1\.1 s/);
    assert.doesNotMatch(page, /Overdue/);
  });

  it('says a pod without jobs has no history', () => {
    const page = renderTimelinePage(timeline({ names: [] }), { nowMs: T0, workers: new Map() }).value;
    assert.match(page, /hold no job of this UID/);
    assert.ok(page.includes(`<h1>Pod ${UID}</h1>`));
  });
});

describe('overdueHint', () => {
  it('points at the agent when a due run has not started for a while', () => {
    const hint = overdueHint(timeline({ verdict: { kind: 'requeued', nextRunAt: T0 } }), { nowMs: T0 + 60_000, workers: new Map([['n1', 0]]) });
    assert.equal(hint, "Overdue by 1 min: no worker has started it (0 workers on node n1's queue). Is the nodelet agent of the node running and connected to Redis?");
  });

  it('stays quiet while the run is not yet due, or was due only a moment ago', () => {
    const t = timeline({ verdict: { kind: 'retrying', failures: 1, error: 'x', nextRunAt: T0 } });
    assert.equal(overdueHint(t, { nowMs: T0 - 5000, workers: new Map() }), undefined);
    assert.equal(overdueHint(t, { nowMs: T0 + 2000, workers: new Map() }), undefined);
    assert.equal(overdueHint(timeline({ verdict: { kind: 'running', since: T0 } }), { nowMs: T0 + 600_000, workers: new Map() }), undefined);
  });
});

describe('renderIndexPage', () => {
  it('lists each node queue with counts and workers, and recent pods linked to their timelines', () => {
    const page = renderIndexPage({
      queues: [{ node: 'n1', name: 'nodelet-reconcile-n1', counts: { active: 1, waiting: 2, prioritized: 1, delayed: 3, failed: 4, completed: 5 }, workers: 1 }],
      recentPods: [{ uid: UID, namespace: 'shop', name: 'api-0', node: 'n1', state: 'delayed', lastActivityAt: T0 }],
      readOnly: true,
      nowMs: T0 + 5000,
    }).value;
    assert.match(page, /1 node queue in Redis · read-only/);
    assert.match(page, /<tr data-node="n1"><td><a href="\/queues\/queue\/nodelet-reconcile-n1">n1<\/a>/);
    assert.match(page, /<td class="num">1<\/td><td class="num">1<\/td><td class="num">3<\/td><td class="num">3<\/td><td class="num">4<\/td><td class="num">5<\/td>/);
    assert.ok(page.includes(`<a href="/pods/${UID}">shop/api-0</a>`));
    assert.match(page, /5\.0 s ago/);
  });

  it('says so when no queue exists yet', () => {
    const page = renderIndexPage({ queues: [], recentPods: [], readOnly: false, nowMs: T0 }).value;
    assert.match(page, /No reconcile queue found yet/);
    assert.match(page, /actions allowed/);
  });
});

describe('renderSearchPage', () => {
  it('keeps the query in the form and escapes it', () => {
    const page = renderSearchPage({ namespace: 'a"b', name: 'x' }, [], T0).value;
    assert.match(page, /value="a&quot;b"/);
    assert.match(page, /No job in the queue history names such a pod/);
  });
});
