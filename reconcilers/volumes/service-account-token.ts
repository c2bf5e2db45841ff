/**
 * Service-account tokens for projected volumes, cached per pod the way the kubelet's token manager
 * does (`pkg/kubelet/token/token_manager.go`): a token is reused until it is past 80% of its
 * lifetime (or 24 hours old), then a new TokenRequest replaces it.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { IssuedToken, ServiceAccountTokenRequest, VolumeSourceApi } from './types.js';

/** The API's default `expirationSeconds` for a serviceAccountToken projection. */
export const DEFAULT_TOKEN_EXPIRATION_SECONDS = 3600;
/** Refresh once this fraction of the lifetime has passed. */
const REFRESH_FRACTION = 0.8;
/** Tokens older than this are refreshed whatever their lifetime. */
const MAX_TOKEN_AGE_MS = 24 * 60 * 60 * 1000;

/** A cached token and the lifetime it was requested with. */
export interface CachedToken extends IssuedToken {
  readonly expirationSeconds: number;
}

/**
 * True when `token` must be replaced at `now`: past 80% of its requested lifetime (counted back
 * from the expiry the API server reported) or older than 24 hours.
 */
export function tokenNeedsRefresh(token: CachedToken, now: Date): boolean {
  const lifetimeMs = token.expirationSeconds * 1000;
  const expiresAtMs = token.expiresAt.getTime();
  const issuedAtMs = expiresAtMs - lifetimeMs;
  if (now.getTime() >= issuedAtMs + MAX_TOKEN_AGE_MS) return true;
  return now.getTime() >= issuedAtMs + lifetimeMs * REFRESH_FRACTION;
}

/** Which token a projection needs. */
export interface TokenLookup {
  readonly pod: V1Pod;
  readonly volumeName: string;
  /** Omitted or empty: the API server's default audiences. */
  readonly audience?: string;
  readonly expirationSeconds: number;
}

/** Per-pod cache of service-account tokens. */
export interface ServiceAccountTokens {
  /** A valid token for the pod's service account, from the cache or a new TokenRequest. */
  token(lookup: TokenLookup): Promise<string>;
  /** Drops every token cached for the pod (when its volumes are cleaned up). */
  forgetPod(podUid: string): void;
}

/** Dependencies of {@link createServiceAccountTokens}. */
export interface ServiceAccountTokensOptions {
  readonly api: VolumeSourceApi;
  readonly clock: () => Date;
}

function tokenRequestFor(pod: V1Pod, audience: string | undefined, expirationSeconds: number): ServiceAccountTokenRequest {
  return {
    namespace: pod.metadata?.namespace ?? '',
    serviceAccountName: pod.spec?.serviceAccountName ?? 'default',
    ...(audience === undefined ? {} : { audience }),
    expirationSeconds,
    podName: pod.metadata?.name ?? '',
    podUid: pod.metadata?.uid ?? '',
  };
}

/** Creates an empty token cache. */
export function createServiceAccountTokens(options: ServiceAccountTokensOptions): ServiceAccountTokens {
  /** pod UID → (volume, audience, lifetime) → token. Pruned by `forgetPod`. */
  const byPod = new Map<string, Map<string, CachedToken>>();

  return {
    async token(lookup: TokenLookup): Promise<string> {
      const { pod } = lookup;
      const podUid = pod.metadata?.uid ?? '';
      const audience = lookup.audience === '' ? undefined : lookup.audience;
      const key = JSON.stringify([lookup.volumeName, audience ?? '', lookup.expirationSeconds]);
      const cached = byPod.get(podUid)?.get(key);
      if (cached !== undefined && !tokenNeedsRefresh(cached, options.clock())) return cached.token;

      const issued = await options.api.requestServiceAccountToken(tokenRequestFor(pod, audience, lookup.expirationSeconds));
      const tokens = byPod.get(podUid) ?? new Map<string, CachedToken>();
      tokens.set(key, { ...issued, expirationSeconds: lookup.expirationSeconds });
      byPod.set(podUid, tokens);
      return issued.token;
    },
    forgetPod(podUid: string): void {
      byPod.delete(podUid);
    },
  };
}
