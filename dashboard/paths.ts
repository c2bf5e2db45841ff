/** The dashboard's URL layout, in one place: its own pages and bull-board's (mounted at `/queues`). */
import { reconcileQueueName } from '../controllers/queue/redis.js';

/** Where bull-board is mounted. */
export const BULL_BOARD_BASE = '/queues';

/** The timeline page of a pod. */
export function timelinePath(uid: string): string {
  return `/pods/${encodeURIComponent(uid)}`;
}

/** bull-board's page of a node's queue. */
export function bullBoardQueuePath(node: string): string {
  return `${BULL_BOARD_BASE}/queue/${encodeURIComponent(reconcileQueueName(node))}`;
}

/** bull-board's page of one job. */
export function bullBoardJobPath(node: string, jobId: string): string {
  return `${bullBoardQueuePath(node)}/${encodeURIComponent(jobId)}`;
}
