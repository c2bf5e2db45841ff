/**
 * The order a pod's containers stop in, as the kubelet's terminationOrdering
 * (kuberuntime_termination_order.go): every container is told to stop at once (its Killing event
 * and preStop hook start together), but a sidecar (restartable init container) is sent its signal
 * only after every app container has stopped and after the sidecars declared after it have, so the
 * sidecars serve the app containers to the end and stop in reverse order. The wait comes off the
 * container's grace period and never outlasts it: a sidecar whose turn does not come in time is
 * stopped anyway.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Clock } from '../../util/clock.js';
import { isSidecar } from '../model/sidecar.js';

interface Gate {
  readonly stopped: Promise<void>;
  open(): void;
}

function gate(): Gate {
  let open = (): void => undefined;
  const stopped = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { stopped, open };
}

/** Which containers each one waits for, and which have stopped. */
export class TerminationOrder {
  private readonly gates = new Map<string, Gate>();
  private readonly prereqs = new Map<string, string[]>();

  /** `running`: the names of the containers being stopped (any other counts as stopped already). */
  constructor(pod: V1Pod | undefined, running: readonly string[], private readonly clock: Clock) {
    const apps = (pod?.spec?.containers ?? []).map((c) => c.name);
    const inits = [...(pod?.spec?.initContainers ?? [])].reverse();
    for (const name of [...apps, ...inits.map((c) => c.name)]) {
      const g = gate();
      if (!running.includes(name)) g.open();
      this.gates.set(name, g);
    }
    let later: string | undefined;
    for (const container of inits.filter(isSidecar)) {
      this.prereqs.set(container.name, [...apps, ...(later === undefined ? [] : [later])]);
      later = container.name;
    }
  }

  /** The names `name` waits for before its signal (app containers and later sidecars); none for others. Pure. */
  waitsFor(name: string): readonly string[] {
    return this.prereqs.get(name) ?? [];
  }

  /**
   * Waits until every container `name` waits for has stopped, at most `graceSeconds`; resolves
   * with the whole seconds waited (what comes off its grace period, as the kubelet truncates it).
   */
  async waitForTurn(name: string, graceSeconds: number): Promise<number> {
    const waitsFor = this.waitsFor(name);
    if (graceSeconds <= 0 || waitsFor.length === 0) return 0;
    const started = this.clock.now();
    let timer: unknown;
    const outOfGrace = new Promise<void>((resolve) => {
      timer = this.clock.setTimeout(resolve, graceSeconds * 1000);
    });
    const all = Promise.all(waitsFor.map((n) => this.gates.get(n)?.stopped ?? Promise.resolve()));
    await Promise.race([all, outOfGrace]);
    this.clock.clearTimeout(timer);
    return Math.floor((this.clock.now() - started) / 1000);
  }

  /** The container `name` has stopped: those waiting for it may go. */
  stopped(name: string): void {
    this.gates.get(name)?.open();
  }
}
