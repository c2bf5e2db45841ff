/**
 * The manifest-URL source (the kubelet's `--manifest-url`, `pkg/kubelet/config/http.go`): the body
 * served at a URL is the node's set of URL static pods, with the kubelet's defaults applied
 * (`static-pod.ts`, source `http`).
 *
 * - GET every `periodMs` (20 s, `--http-check-frequency`) with the configured headers, each GET cut
 *   off after `timeoutMs` (10 s, the kubelet's client timeout).
 * - The body is one Pod or a v1 PodList, YAML or JSON. Any invalid pod refuses the whole body and
 *   the previous pods stay (a half-applied list would stop pods nobody removed).
 * - Anything but 200, a network error or a timeout is an error with no update: the pods stay.
 * - An empty body is an empty set (every URL pod stops, and the source counts as synced), and
 *   still an error, as the kubelet has it.
 * - A body equal to the last one applied is ignored (pods keep their `config.seen`).
 * - Failures are logged at most 3 times in a row, then suppressed until the next success, so a URL
 *   that is down does not flood the log every 20 s.
 *
 * Synced after the first body applied (empty included); healthy while the last GET succeeded.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { systemClock, type Clock } from '../../util/clock.js';
import { createPeriodicLoop } from '../../util/periodic-loop.js';
import { podKeyOf, type PodKey } from '../../util/pod-key.js';
import type { DesiredPodSource } from './pod-store.js';
import { applyStaticPodDefaults, isManifestError, parseManifestBody } from './static-pod.js';
import type { PodEventSink } from '../../reconcilers/model/pod-event.js';

/** The kubelet's `--manifest-url` and its companion flags. */
export interface ManifestUrlSettings {
  readonly url: string;
  /** In the order given; a name may repeat. */
  readonly headers: readonly (readonly [string, string])[];
  readonly periodMs: number;
}

/** Options of {@link createUrlSource}. */
export interface UrlSourceOptions {
  readonly url: string;
  /** Sent with every GET, in order; a name may repeat (`--manifest-url-header`). */
  readonly headers: readonly (readonly [string, string])[];
  readonly nodeName: string;
  readonly logger: Logger;
  /** Called for every pod added or gone; must not throw and should only enqueue. */
  /** Where each static pod that appears or goes is told. */
  readonly podEvents: PodEventSink;
  readonly clock?: Clock;
  /** Poll period; default 20 s. */
  readonly periodMs?: number;
  /** Per-GET limit; default 10 s. */
  readonly timeoutMs?: number;
}

/** The manifest URL as a pod source; `poll()` GETs it now (tests). */
export interface UrlSource extends DesiredPodSource {
  readonly name: 'http';
  poll(): Promise<void>;
}

/** Failures logged in a row before the rest are suppressed until a success. */
const LOGGED_FAILURES = 3;

/** Why a GET brought no update (logged with the suppression rule). */
class UrlFetchError extends Error {
  override readonly name = 'UrlFetchError';
}

/** GETs the body; throws {@link UrlFetchError} for a status other than 200. */
async function fetchBody(options: UrlSourceOptions): Promise<string> {
  const headers = new Headers();
  for (const [name, value] of options.headers) headers.append(name, value);
  const response = await fetch(options.url, { headers, signal: AbortSignal.timeout(options.timeoutMs ?? 10_000) });
  const body = await response.text();
  if (response.status !== 200) throw new UrlFetchError(`${options.url} answered ${response.status}`);
  return body;
}

/** Creates the source; nothing is fetched until `start()`. */
export function createUrlSource(options: UrlSourceOptions): UrlSource {
  const clock = options.clock ?? systemClock;
  const logger = options.logger.child({ component: 'url-source', url: options.url });
  let pods = new Map<string, V1Pod>();
  let lastBody: string | undefined;
  let synced = false;
  let healthy = true;
  let failures = 0;

  const notify = (key: PodKey, change: 'added' | 'vanished'): void => {
    try {
      options.podEvents.emit({ kind: 'source-changed', key, source: 'http', change });
    } catch (err: unknown) {
      logger.error({ err, podUID: key.uid, change }, 'the pod event sink threw');
    }
  };

  function apply(next: readonly V1Pod[]): void {
    const previous = pods;
    pods = new Map(next.map((pod) => [pod.metadata?.uid ?? '', previous.get(pod.metadata?.uid ?? '') ?? pod]));
    for (const [uid, pod] of previous) if (!pods.has(uid)) notify(podKeyOf(pod), 'vanished');
    for (const [uid, pod] of pods) if (!previous.has(uid)) notify(podKeyOf(pod), 'added');
    synced = true;
  }

  function failed(err: unknown): void {
    healthy = false;
    failures += 1;
    if (failures <= LOGGED_FAILURES) logger.warn({ err, failures }, failures === LOGGED_FAILURES ? 'manifest URL failed; further failures are not logged until it succeeds' : 'manifest URL failed; its pods are kept');
  }

  async function poll(): Promise<void> {
    let body: string;
    try {
      body = await fetchBody(options);
    } catch (err: unknown) {
      failed(err);
      return;
    }
    if (body.trim() === '') {
      lastBody = body;
      apply([]);
      failed(new UrlFetchError(`${options.url} answered an empty body: no URL pods`));
      return;
    }
    if (body !== lastBody) {
      try {
        const seenAt = new Date(clock.now());
        apply(parseManifestBody(options.url, body).map((pod) => applyStaticPodDefaults(pod, { nodeName: options.nodeName, url: options.url, seenAt })));
      } catch (err: unknown) {
        if (!isManifestError(err)) throw err;
        failed(err);
        return;
      }
      lastBody = body;
    }
    if (failures > LOGGED_FAILURES) logger.info({ failures }, 'manifest URL answers again');
    failures = 0;
    healthy = true;
  }

  const loop = createPeriodicLoop({ name: 'url-source', periodMs: options.periodMs ?? 20_000, firstRun: 'after-period', clock, logger, run: poll });

  return {
    name: 'http',
    async start(): Promise<void> {
      await loop.runNow();
      loop.start();
    },
    stop(): void {
      void loop.stop();
    },
    poll: async () => {
      await loop.runNow();
    },
    get: (uid) => pods.get(uid),
    list: () => [...pods.values()],
    synced: () => synced,
    healthy: () => healthy,
  };
}
