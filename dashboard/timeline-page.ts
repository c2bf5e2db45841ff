/** The HTML of a pod's reconcile timeline (`/pods/:uid`). */
import { describeOutcome, formatDuration, formatRelative, formatTime } from './format.js';
import { html, layout } from './html.js';
import type { SafeHtml } from './html.js';
import type { PodTimeline, TimelineRow, TimelineVerdict } from './pod-timeline.js';
import { bullBoardJobPath, bullBoardQueuePath } from './paths.js';

/** What the timeline page shows besides the timeline. */
export interface TimelinePageContext {
  /** Makes relative times ("in 4 s") and spots overdue runs. */
  readonly nowMs: number;
  /** Workers connected to each node's queue (undefined: unknown). */
  readonly workers: ReadonlyMap<string, number | undefined>;
}

/** A due run not started after this long means no worker is taking jobs. */
const OVERDUE_AFTER_MS = 10_000;

/** Renders the timeline page. */
export function renderTimelinePage(timeline: PodTimeline, context: TimelinePageContext): SafeHtml {
  const { nowMs } = context;
  const title = timeline.names[0] ?? timeline.uid;
  const body = html`
<h1>Pod ${title}</h1>
<div class="muted">UID <code>${timeline.uid}</code>${timeline.names.length > 1 ? html` · also named ${timeline.names.slice(1).join(', ')}` : ''}
 · node ${timeline.nodes.map((node, i) => html`${i > 0 ? ', ' : ''}<a href="${bullBoardQueuePath(node)}">${node}</a>`)}</div>
${renderVerdict(timeline.verdict, nowMs, overdueHint(timeline, context))}
<h2>Reconcile timeline <span class="muted">(newest first, ${timeline.rows.length} ${timeline.rows.length === 1 ? 'entry' : 'entries'})</span></h2>
${timeline.rows.length === 0 ? html`<p class="muted">No reconcile of this UID is left in the queue history.</p>` : renderTable(timeline.rows, nowMs)}
${timeline.untracedRuns > 0 ? html`<p class="muted">${timeline.untracedRuns} earlier run(s) are not shown: job logs keep only their newest runs.</p>` : ''}
`;
  return layout(`Pod ${title}`, body);
}

/** When the pod's next run is overdue: says so, and whether any worker serves its node. */
export function overdueHint(timeline: PodTimeline, context: TimelinePageContext): string | undefined {
  const dueAt = dueTime(timeline.verdict);
  if (dueAt === undefined || context.nowMs - dueAt < OVERDUE_AFTER_MS) return undefined;
  const workers = timeline.nodes.map((node) => {
    const count = context.workers.get(node);
    return `${count ?? 'an unknown number of'} worker${count === 1 ? '' : 's'} on node ${node}'s queue`;
  });
  return `Overdue by ${formatDuration(context.nowMs - dueAt)}: no worker has started it (${workers.join(', ')}). Is the nodelet agent of the node running and connected to Redis?`;
}

function dueTime(verdict: TimelineVerdict): number | undefined {
  switch (verdict.kind) {
    case 'queued':
      return verdict.since;
    case 'retrying':
    case 'requeued':
      return verdict.nextRunAt;
    case 'unknown':
    case 'running':
    case 'failed':
    case 'settled':
      return undefined;
  }
}

function renderVerdict(verdict: TimelineVerdict, nowMs: number, hint: string | undefined): SafeHtml {
  const hintHtml = hint === undefined ? '' : html`<div class="hint">${hint}</div>`;
  const when = (at: number | undefined): string => (at === undefined ? 'later' : `${formatRelative(at, nowMs)} (${formatTime(at)})`);
  switch (verdict.kind) {
    case 'unknown':
      return html`<div class="verdict">The queues hold no job of this UID: it was never enqueued on a known node, or its history expired.</div>`;
    case 'queued':
      return html`<div class="verdict queued"><span class="badge b-queued">queued</span> Waiting for a worker since ${formatRelative(verdict.since, nowMs)}.${hintHtml}</div>`;
    case 'running':
      return html`<div class="verdict running"><span class="badge b-running">running</span> A reconcile started ${formatRelative(verdict.since, nowMs)} and is still running.</div>`;
    case 'retrying':
      return html`<div class="verdict retrying"><span class="badge b-retrying">retrying</span> ${verdict.failures} consecutive failed reconcile${verdict.failures === 1 ? '' : 's'}; next attempt ${when(verdict.nextRunAt)}.<div class="error">${verdict.error}</div>${hintHtml}</div>`;
    case 'requeued':
      return html`<div class="verdict requeued"><span class="badge b-requeued">requeued</span> Reconciled; checks again ${when(verdict.nextRunAt)}.${hintHtml}</div>`;
    case 'failed':
      return html`<div class="verdict failed"><span class="badge b-failed">failed</span> Not retried until the pod changes or the next resync.<div class="error">${verdict.error}</div></div>`;
    case 'settled':
      return html`<div class="verdict settled"><span class="badge b-settled">settled</span> Last reconcile succeeded ${formatRelative(verdict.at, nowMs)}; nothing pending.</div>`;
  }
}

function renderTable(rows: readonly TimelineRow[], nowMs: number): SafeHtml {
  return html`<table class="timeline">
<thead><tr><th>Started</th><th>Outcome</th><th>Reason</th><th>Run</th><th>Attempt</th><th>Duration</th><th>Next run</th><th>Error</th><th>Job</th></tr></thead>
<tbody>
${rows.map((row) => renderRow(row, nowMs))}
</tbody>
</table>`;
}

function renderRow(row: TimelineRow, nowMs: number): SafeHtml {
  const outcome = outcomeCell(row);
  return html`<tr data-outcome="${row.outcome ?? row.kind}">
<td class="mono" title="${formatRelative(row.at, nowMs)}">${formatTime(row.at)}</td>
<td><span class="badge b-${row.outcome ?? row.kind}">${outcome}</span></td>
<td class="nowrap">${row.reason}</td>
<td class="num">${row.run ?? ''}</td>
<td class="num">${row.attempt ?? ''}</td>
<td class="num">${row.durationMs === undefined ? '' : formatDuration(row.durationMs)}</td>
<td class="mono">${row.nextRunAt === undefined ? '' : html`${formatTime(row.nextRunAt)} <span class="muted">(${formatRelative(row.nextRunAt, nowMs)})</span>`}</td>
<td class="error">${row.error ?? ''}</td>
<td class="mono"><a href="${bullBoardJobPath(row.node, row.jobId)}" title="${row.jobState} job on node ${row.node}">${shortJobId(row.jobId)}</a> <span class="muted">${row.jobState}</span></td>
</tr>
`;
}

function outcomeCell(row: TimelineRow): string {
  switch (row.kind) {
    case 'run':
      return row.outcome === undefined ? 'run' : describeOutcome({ outcome: row.outcome, attempt: row.attempt ?? 1 });
    case 'queued':
      return 'queued';
    case 'running':
      return 'running';
    case 'failed':
      return 'failed';
  }
}

/** The job ID without the UID everyone on this page already knows. */
function shortJobId(jobId: string): string {
  const dot = jobId.lastIndexOf('.');
  return dot < 0 ? jobId : `…${jobId.slice(dot)}`;
}
