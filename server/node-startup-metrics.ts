/**
 * The kubelet's node startup durations (`util/node_startup_latency_tracker.go`): from the host's
 * boot to the agent's start (`pre_kubelet`), to its first attempt to register the Node
 * (`pre_registration`), to the Node's creation (`registration`), to the first status that reached
 * the API with Ready true (`post_registration`), and boot to that Ready (the total). As the
 * kubelet's, every step is taken once, the registration figures only when this process created
 * the Node (an agent that found its Node already there keeps them, and the later ones, at 0), and
 * nothing is measured again after a restart of the agent.
 */
import type { NodeStartupMetrics } from '../controllers/node/registration.js';
import type { MetricsRegistry } from '../util/metrics.js';

const alpha = (help: string): string => `[ALPHA] ${help}`;

/** Registers the five gauges (0 until measured); times are milliseconds since the epoch. */
export function nodeStartupMetrics(registry: MetricsRegistry, times: { readonly bootMs: number | undefined; readonly agentStartMs: number; readonly now: () => number }): NodeStartupMetrics {
  const gauge = (name: string, help: string): ((seconds: number) => void) => {
    const g = registry.gauge({ name: `kubelet_node_startup_${name}`, help: alpha(help) });
    g.set({}, 0);
    return (seconds) => { g.set({}, seconds); };
  };
  const preKubelet = gauge('pre_kubelet_duration_seconds', 'Duration in seconds of node startup before kubelet starts.');
  const preRegistration = gauge('pre_registration_duration_seconds', 'Duration in seconds of node startup before registration.');
  const registration = gauge('registration_duration_seconds', 'Duration in seconds of node startup during registration.');
  const postRegistration = gauge('post_registration_duration_seconds', 'Duration in seconds of node startup after registration.');
  const total = gauge('duration_seconds', 'Duration in seconds of node startup in total.');
  const seconds = (fromMs: number, toMs: number): number => (toMs - fromMs) / 1000;
  const { bootMs, agentStartMs } = times;
  let attemptMs: number | undefined;
  let registeredMs: number | undefined;
  let readyMs: number | undefined;
  return {
    registrationAttempted: () => {
      attemptMs ??= times.now();
    },
    registeredNewNode: () => {
      if (attemptMs === undefined || registeredMs !== undefined) return;
      registeredMs = times.now();
      if (bootMs !== undefined) preKubelet(seconds(bootMs, agentStartMs));
      preRegistration(seconds(agentStartMs, attemptMs));
      registration(seconds(attemptMs, registeredMs));
    },
    nodeReady: () => {
      if (registeredMs === undefined || readyMs !== undefined) return;
      readyMs = times.now();
      postRegistration(seconds(registeredMs, readyMs));
      if (bootMs !== undefined) total(seconds(bootMs, readyMs));
    },
  };
}
