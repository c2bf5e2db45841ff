/**
 * Whether the node is shutting down: written by the node shutdown manager, read by admission (new
 * pods refused) and by the Node's Ready condition (false, "node is shutting down", as the
 * kubelet's node status setter reports its shutdown manager's error). Made before both, so
 * neither is bound late.
 */
import type { NodeReadiness } from '../node/node-status.js';
import type { NodeShutdownStatus } from '../../reconcilers/admission/node-shutdown.js';

/** The kubelet's error text, which becomes the Ready condition's message. */
export const NODE_SHUTTING_DOWN_MESSAGE = 'node is shutting down';

export class NodeShutdownState implements NodeShutdownStatus {
  private now = false;

  shuttingDown(): boolean {
    return this.now;
  }

  setShuttingDown(shuttingDown: boolean): void {
    this.now = shuttingDown;
  }

  /** The Node's readiness with the shutdown taken into account: not ready while shutting down. */
  readiness(runtime: () => Promise<NodeReadiness>): () => Promise<NodeReadiness> {
    return async () => (this.now ? { ready: false, reason: '', message: NODE_SHUTTING_DOWN_MESSAGE } : runtime());
  }
}
