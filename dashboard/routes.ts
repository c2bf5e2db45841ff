/**
 * The dashboard's own pages, around bull-board: the index, the pod search, and a pod's timeline.
 * Server-rendered HTML with a strict content security policy (no scripts at all).
 */
import { Router } from 'express';
import type { Request, Response } from 'express';
import type { Clock } from '../util/clock.js';
import { renderIndexPage, renderSearchPage } from './index-page.js';
import type { JobHistory } from './job-history.js';
import { timelinePath } from './paths.js';
import { buildTimeline } from './pod-timeline.js';
import { renderTimelinePage } from './timeline-page.js';
import type { SafeHtml } from './html.js';

/** What the pages need. */
export interface PageDeps {
  readonly history: JobHistory;
  readonly clock: Clock;
  readonly readOnly: boolean;
  /** Scans Redis for new node queues before the index is rendered. */
  readonly refreshQueues: () => Promise<unknown>;
}

/** How many of the newest jobs per state and node the index reads to list recent pods. */
const RECENT_JOBS_PER_STATE = 100;
const RECENT_PODS_SHOWN = 50;
// A Kubernetes UID is a UUID; static pods' UIDs are hashes. Anything else is not looked up.
const UID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** The router of the dashboard's own pages. */
export function pageRoutes(deps: PageDeps): Router {
  const router = Router();
  router.get('/', async (_req, res) => {
    await deps.refreshQueues();
    const [queues, recent] = await Promise.all([deps.history.counts(), deps.history.findPods({ limitPerState: RECENT_JOBS_PER_STATE })]);
    sendPage(res, 200, renderIndexPage({ queues, recentPods: recent.slice(0, RECENT_PODS_SHOWN), readOnly: deps.readOnly, nowMs: deps.clock.now() }));
  });
  router.get('/pods', async (req, res) => {
    await searchPods(deps, req, res);
  });
  router.get('/pods/:uid', async (req, res) => {
    const uid = req.params.uid;
    if (!UID_PATTERN.test(uid)) {
      res.status(400).type('text/plain').send('not a pod UID\n');
      return;
    }
    const timeline = buildTimeline(uid, await deps.history.jobsOfPod(uid));
    const workers = await deps.history.workersOfNodes(timeline.nodes);
    sendPage(res, timeline.rows.length === 0 ? 404 : 200, renderTimelinePage(timeline, { nowMs: deps.clock.now(), workers }));
  });
  return router;
}

async function searchPods(deps: PageDeps, req: Request, res: Response): Promise<void> {
  const uid = queryString(req, 'uid');
  if (uid !== undefined) {
    res.redirect(303, timelinePath(uid));
    return;
  }
  const namespace = queryString(req, 'namespace');
  const name = queryString(req, 'name');
  if (name === undefined) {
    res.redirect(303, '/');
    return;
  }
  const pods = await deps.history.findPods({ ...(namespace === undefined ? {} : { namespace }), name });
  const only = pods.length === 1 ? pods[0] : undefined;
  if (only !== undefined) {
    res.redirect(303, timelinePath(only.uid));
    return;
  }
  sendPage(res, pods.length === 0 ? 404 : 200, renderSearchPage({ ...(namespace === undefined ? {} : { namespace }), name }, pods, deps.clock.now()));
}

/** A non-empty, trimmed query parameter given once. */
function queryString(req: Request, key: string): string | undefined {
  const value: unknown = req.query[key];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

function sendPage(res: Response, status: number, page: SafeHtml): void {
  res
    .status(status)
    .set({
      'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
      'Cache-Control': 'no-store',
    })
    .type('html')
    .send(page.value);
}
