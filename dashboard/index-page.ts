/** The index (`/`): every node's queue with its counts, a pod search, and recently reconciled pods. */
import { formatRelative, formatTime } from './format.js';
import { html, layout } from './html.js';
import type { SafeHtml } from './html.js';
import type { NodeQueueCounts, PodSighting } from './job-history.js';
import { bullBoardQueuePath, timelinePath } from './paths.js';

/** What the index shows. */
export interface IndexPageModel {
  readonly queues: readonly NodeQueueCounts[];
  readonly recentPods: readonly PodSighting[];
  readonly readOnly: boolean;
  readonly nowMs: number;
}

/** Renders the index page. */
export function renderIndexPage(model: IndexPageModel): SafeHtml {
  const body = html`
<h1>Reconcile queues</h1>
<div class="muted">${model.queues.length} node queue${model.queues.length === 1 ? '' : 's'} in Redis${model.readOnly ? ' · read-only' : ' · actions allowed'}</div>
${renderQueues(model.queues)}
<h2>Find a pod</h2>
${renderSearchForm({})}
<h2>Recently reconciled pods</h2>
${model.recentPods.length === 0 ? html`<p class="muted">No reconcile jobs yet.</p>` : renderPods(model.recentPods, model.nowMs)}
`;
  return layout('Reconcile queues', body);
}

/** Renders the answer to a search that did not lead to exactly one pod. */
export function renderSearchPage(query: { readonly namespace?: string; readonly name?: string }, pods: readonly PodSighting[], nowMs: number): SafeHtml {
  const what = `${query.namespace ?? '*'}/${query.name ?? '*'}`;
  const body = html`
<h1>Pods named ${what}</h1>
${renderSearchForm(query)}
${pods.length === 0 ? html`<p class="muted">No job in the queue history names such a pod.</p>` : renderPods(pods, nowMs)}
`;
  return layout(`Pods ${what}`, body);
}

function renderQueues(queues: readonly NodeQueueCounts[]): SafeHtml {
  if (queues.length === 0) return html`<p class="muted">No reconcile queue found yet; nodes appear here when their agent starts.</p>`;
  return html`<table class="queues">
<thead><tr><th>Node</th><th>Workers</th><th>Active</th><th>Waiting</th><th>Delayed</th><th>Failed</th><th>Completed</th></tr></thead>
<tbody>
${queues.map(
  (q) => html`<tr data-node="${q.node}"><td><a href="${bullBoardQueuePath(q.node)}">${q.node}</a> <span class="muted mono">${q.name}</span></td>
<td class="num">${q.workers ?? '?'}</td><td class="num">${q.counts.active}</td><td class="num">${q.counts.waiting + q.counts.prioritized}</td><td class="num">${q.counts.delayed}</td><td class="num">${q.counts.failed}</td><td class="num">${q.counts.completed}</td></tr>
`,
)}
</tbody></table>`;
}

function renderSearchForm(query: { readonly namespace?: string; readonly name?: string }): SafeHtml {
  return html`<form class="search" method="get" action="/pods">
<input name="namespace" placeholder="namespace" value="${query.namespace ?? ''}">
<input name="name" placeholder="pod name" value="${query.name ?? ''}" required>
<button type="submit">Show timeline</button>
</form>
<form class="search" method="get" action="/pods" style="margin-top: 8px">
<input name="uid" placeholder="pod UID" size="38" required>
<button type="submit">Open UID</button>
</form>`;
}

function renderPods(pods: readonly PodSighting[], nowMs: number): SafeHtml {
  return html`<table class="pods">
<thead><tr><th>Pod</th><th>UID</th><th>Node</th><th>Newest job</th><th>Last activity</th></tr></thead>
<tbody>
${pods.map(
  (p) => html`<tr><td><a href="${timelinePath(p.uid)}">${p.namespace}/${p.name}</a></td><td class="mono"><a href="${timelinePath(p.uid)}">${p.uid}</a></td>
<td>${p.node}</td><td><span class="badge b-${p.state}">${p.state}</span></td><td class="mono" title="${formatTime(p.lastActivityAt)}">${formatRelative(p.lastActivityAt, nowMs)}</td></tr>
`,
)}
</tbody></table>`;
}
