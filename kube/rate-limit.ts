/**
 * The client-side rate limit of API requests: the kubelet's `--kube-api-qps` / `--kube-api-burst`
 * (KubeletConfiguration `kubeAPIQPS` / `kubeAPIBurst`) as client-go applies them (v0.37.2).
 *
 * The kubelet copies the two values into its `rest.Config` (cmd/kubelet/app/server.go,
 * `kubeClientConfigOverrides`) and builds its clientset with `kubernetes.NewForConfig`, which:
 * - with QPS above 0, makes one token bucket (`flowcontrol.NewTokenBucketRateLimiter(qps, burst)`)
 *   shared by every API group's client; a burst of 0 is an error there ("burst is required to be
 *   greater than 0"), so the kubelet fails to start;
 * - with QPS 0, makes none, and each API group-version's client then makes its own bucket at
 *   rest's defaults (`rest.RESTClientFor`): 5 QPS, and the burst given, or 10 when it is 0. (The
 *   kubelet's flag help says "If 0 will use DefaultQPS: 50"; the code says 5 per group-version.)
 * - with QPS below 0, makes no bucket at all: requests are not limited. The kubelet's validation
 *   refuses a negative `kubeAPIQPS`, but it builds its heartbeat client this way (QPS -1), and its
 *   event client when `eventRecordQPS` is 0.
 *
 * What takes a token: every request, before it is sent (client-go's `tryThrottle` in
 * `Request.request`), except watches: `Request.Watch` says "We specifically don't want to rate
 * limit watches" and sends its first attempt without a token (only a retry after a Retry-After
 * answer takes one, and nodelet's transport retries nothing itself).
 */
import type { Clock } from '../util/clock.js';
import { TokenBucket } from '../util/token-bucket.js';

/** rest.DefaultQPS: the rate of a group-version's own bucket when the configured QPS is 0. */
export const REST_DEFAULT_QPS = 5;
/** rest.DefaultBurst: that bucket's size when the configured burst is 0 too. */
export const REST_DEFAULT_BURST = 10;

/** Holds API requests to a rate; shared by every client that should count against it. */
export interface RequestRateLimiter {
  /**
   * Takes a token for a request to `path` (the API path, without the query), waiting for it when
   * none is left. Resolves with the milliseconds waited; rejects with the signal's reason when it
   * aborts first.
   */
  wait(path: string, signal?: AbortSignal): Promise<number>;
}

/** The two numbers of a `rest.Config`. */
export interface ApiRateLimits {
  /** Requests per second; 0: rest's default per group-version; below 0: no limit. */
  readonly qps: number;
  /** Requests that may go at once above the rate. */
  readonly burst: number;
}

/** Limits client-go would refuse to build a client with; the message is client-go's. */
export class InvalidApiRateLimitsError extends RangeError {
  override readonly name = 'InvalidApiRateLimitsError';
}

/** One bucket for every request. */
class SharedLimiter implements RequestRateLimiter {
  constructor(private readonly bucket: TokenBucket) {}

  wait(_path: string, signal?: AbortSignal): Promise<number> {
    return this.bucket.wait(signal);
  }
}

/**
 * The group-version a path belongs to, as the typed clientset splits its clients: `/api/v1/…` is
 * core/v1, `/apis/<group>/<version>/…` its group's; anything else (`/version`, `/healthz`) the
 * discovery client's.
 */
export function groupVersionOf(path: string): string {
  const parts = path.split('/');
  if (parts[1] === 'api' && parts[2] !== undefined) return `core/${parts[2]}`;
  if (parts[1] === 'apis' && parts[2] !== undefined && parts[3] !== undefined) return `${parts[2]}/${parts[3]}`;
  return 'discovery';
}

/** A bucket per group-version, made on first use: the clientset built with QPS 0. */
class PerGroupLimiter implements RequestRateLimiter {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(
    private readonly burst: number,
    private readonly clock: Clock,
  ) {}

  wait(path: string, signal?: AbortSignal): Promise<number> {
    const key = groupVersionOf(path);
    let bucket = this.buckets.get(key);
    if (bucket === undefined) {
      bucket = new TokenBucket(REST_DEFAULT_QPS, this.burst, this.clock);
      this.buckets.set(key, bucket);
    }
    return bucket.wait(signal);
  }
}

/**
 * The limiter client-go gives a clientset built with these limits; undefined when requests are
 * not limited (QPS below 0).
 * @throws InvalidApiRateLimitsError for a negative burst, a QPS above 0 with a burst of 0, or a value that is not a number
 */
export function apiRateLimiter(limits: ApiRateLimits, clock: Clock): RequestRateLimiter | undefined {
  const { qps, burst } = limits;
  if (Number.isNaN(qps) || !Number.isInteger(burst)) throw new InvalidApiRateLimitsError(`API rate limits must be numbers, got qps ${qps} and burst ${burst}`);
  if (qps < 0) return undefined;
  // Such a bucket refuses every wait in client-go (rate: "Wait(n=1) exceeds limiter's burst").
  if (burst < 0) throw new InvalidApiRateLimitsError(`burst must not be negative, got ${burst}`);
  if (qps === 0) return new PerGroupLimiter(burst === 0 ? REST_DEFAULT_BURST : burst, clock);
  if (burst === 0) throw new InvalidApiRateLimitsError('burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0');
  return new SharedLimiter(new TokenBucket(qps, burst, clock));
}
