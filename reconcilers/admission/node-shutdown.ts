/**
 * The kubelet's node shutdown admission (its shutdown manager is the last admit handler): while
 * the node is shutting down, a new pod is rejected (phase Failed, `NodeShutdown`) rather than
 * started on a host about to go down.
 */
import { ADMITTED, type AdmitResult, type PodAdmitHandler } from './admit.js';

export const NODE_SHUTDOWN_REJECTED_REASON = 'NodeShutdown';
export const NODE_SHUTDOWN_REJECTED_MESSAGE = 'Pod was rejected as the node is shutting down.';

/** Whether the node is shutting down now (the node shutdown manager's mark). */
export interface NodeShutdownStatus {
  shuttingDown(): boolean;
}

export function nodeShutdownAdmitHandler(status: NodeShutdownStatus): PodAdmitHandler {
  return {
    name: 'node-shutdown',
    admit: (): AdmitResult => (status.shuttingDown() ? { admit: false, reason: NODE_SHUTDOWN_REJECTED_REASON, message: NODE_SHUTDOWN_REJECTED_MESSAGE } : ADMITTED),
  };
}
