/**
 * The runtime half of the Node's Ready condition, as the kubelet's runtime state reports it:
 * not ready while PLEG has not relisted recently (`PLEGNotHealthy`), while the runtime does not
 * answer (`RuntimeUnavailable`), or while it reports `RuntimeReady` or `NetworkReady` false (with
 * the runtime's own reason, e.g. `NetworkPluginNotReady`).
 */
import type { RuntimeService } from '../../cri/types.js';
import type { NodeReadiness } from './node-status.js';

/** Anything whose recent health gates node readiness (PLEG). */
export interface HealthSignal {
  healthy(): boolean;
}

const PLEG_NOT_HEALTHY: NodeReadiness = { ready: false, reason: 'PLEGNotHealthy', message: 'PLEG is not healthy: the runtime has not been relisted for 3m0s' };

/** Builds the readiness check the node controller and the NodeAgent report. */
export function runtimeReadiness(runtime: Pick<RuntimeService, 'status'>, pleg: HealthSignal): () => Promise<NodeReadiness> {
  return async () => {
    if (!pleg.healthy()) return PLEG_NOT_HEALTHY;
    try {
      const status = await runtime.status();
      const failing = status.conditions.filter((c) => (c.type === 'RuntimeReady' || c.type === 'NetworkReady') && !c.status);
      if (failing.length === 0) return { ready: true, reason: '', message: '' };
      return { ready: false, reason: failing[0]?.reason ?? 'RuntimeNotReady', message: failing.map((c) => `${c.type}=false: ${c.message}`).join('; ') };
    } catch (error) {
      return { ready: false, reason: 'RuntimeUnavailable', message: error instanceof Error ? error.message : String(error) };
    }
  };
}
