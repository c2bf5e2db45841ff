/**
 * The node's view of the cluster's services, for the service environment variables of every
 * container (`reconcilers/container/service-env.ts`), as the kubelet's service informer: every namespace,
 * headless services left out by the server (`fieldSelector=spec.clusterIP!=None`, kubelet
 * issue 122394). `hasSynced()` turns true after the first full list and stays true; until then no
 * container starts (the kubelet's `serviceHasSynced`). After an error the informer restarts with
 * capped exponential backoff, jittered as client-go's reflector (1.0: each delay anywhere in
 * [d, 2d), so a fleet does not come back in step after an API server restart), and keeps serving
 * its last list meanwhile, as a client-go lister does.
 */
import type { V1Service, V1ServiceList } from '@kubernetes/client-node';
import type { KubeClient } from '../../kube/client.js';
import { CoreV1Client } from '../../kube/core-v1.js';
import { ListWatchInformer } from '../../kube/informer.js';
import type { Logger } from 'pino';
import { backoffDelay, type BackoffPolicy } from '../../util/backoff.js';
import { systemClock, type Clock, type TimerHandle } from '../../util/clock.js';
import type { ServiceLister } from '../../reconcilers/container/service-env.js';
import { ObservedWatch } from '../pod-sources/pod-watch.js';

/** Only services with a cluster IP give variables; headless ones are not even listed. */
export const SERVICE_FIELD_SELECTOR = 'spec.clusterIP!=None';

/** Options of {@link createServiceSource}. */
export interface ServiceSourceOptions {
  readonly kube: KubeClient;
  readonly logger: Logger;
  readonly clock?: Clock;
  /** Restart delay after informer errors; default 1 s doubling to 30 s, jittered by 1.0. */
  readonly backoff?: BackoffPolicy;
  /** A number in [0, 1) for the jitters (the restart backoff's, the informer's reconnect); default Math.random. */
  readonly random?: () => number;
}

/** A service lister fed by an informer; nothing is listed until `start()`. */
export interface ServiceSource extends ServiceLister {
  /** Starts the informer; resolves after its first list attempt (synced or failed and retrying). */
  start(): Promise<void>;
  stop(): void;
}

const DEFAULT_BACKOFF: BackoffPolicy = { initialMs: 1000, maxMs: 30_000, jitter: 1 };

/** Creates the service source. */
export function createServiceSource(options: ServiceSourceOptions): ServiceSource {
  const clock = options.clock ?? systemClock;
  const backoff = options.backoff ?? DEFAULT_BACKOFF;
  const random = options.random ?? Math.random;
  const logger = options.logger.child({ component: 'service-source' });
  const api = new CoreV1Client(options.kube);
  const state = { synced: false, stopped: true, failures: 0 };
  let restartTimer: TimerHandle | undefined;
  const listServices = async (): Promise<V1ServiceList> => {
    const list = await api.listServiceForAllNamespaces({ fieldSelector: SERVICE_FIELD_SELECTOR });
    state.failures = 0;
    logger.debug({ services: list.items.length }, 'services listed');
    return list;
  };
  const watch = new ObservedWatch(options.kube.transport, { onActivity: () => undefined, isCurrent: () => !state.stopped });
  const informer = new ListWatchInformer<V1Service>({ path: '/api/v1/services', list: listServices, watch, fieldSelector: SERVICE_FIELD_SELECTOR, clock, random });

  /**
   * Synced once the informer's cache holds a list: it records the list's resourceVersion right
   * after filling its cache (a flag set in the list function would be seen before the cache is
   * filled). Sticky, as client-go's HasSynced: a relist after 410 Gone keeps serving the old cache.
   */
  function hasSynced(): boolean {
    if (!state.synced && informer.latestResourceVersion() !== '') state.synced = true;
    return state.synced;
  }

  async function run(): Promise<void> {
    try {
      await informer.start();
    } catch (err: unknown) {
      onError(err);
    }
  }

  function onError(err: unknown): void {
    if (state.stopped || restartTimer !== undefined) return;
    state.failures += 1;
    const delayMs = backoffDelay(backoff, state.failures, random);
    logger.warn({ err, failures: state.failures, retryInMs: delayMs, synced: hasSynced() }, 'service informer failed; restarting');
    restartTimer = clock.setTimeout(() => {
      restartTimer = undefined;
      if (!state.stopped) void run();
    }, delayMs);
  }
  informer.on('error', onError);

  return {
    hasSynced,
    list: () => informer.list(),
    async start(): Promise<void> {
      if (!state.stopped) return;
      state.stopped = false;
      await run();
    },
    stop(): void {
      state.stopped = true;
      clock.clearTimeout(restartTimer);
      restartTimer = undefined;
      void informer.stop();
    },
  };
}
