/**
 * Who is asking, as the kubelet's authenticator answers it: a client certificate verified against
 * `--client-ca-file` (user from CN, groups from O, as the API server's x509 authenticator), then a
 * bearer token reviewed by the API server (TokenReview), cached as the kubelet's webhook
 * authenticator does (2 minutes, for an authenticated and an unauthenticated answer alike; an
 * error is never cached). Each method that fails lets the next try, as the API server's union
 * authenticator; nobody identified is 401 (anonymous requests are not allowed).
 */
import { createHash } from 'node:crypto';
import type { Clock } from '../util/clock.js';
import { TtlCache } from './ttl-cache.js';

/** An authenticated user, as the API's UserInfo. */
export interface UserInfo {
  readonly name: string;
  readonly uid?: string;
  readonly groups: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

/** Reviews a bearer token with the API server. */
export interface TokenReviewer {
  /** The token's user, or undefined when the API server does not authenticate it. Throws on API errors. */
  review(token: string): Promise<UserInfo | undefined>;
}

/** The parts of a TLS peer certificate the x509 authenticator reads (node's `getPeerCertificate()`). */
export interface PeerCertificate {
  readonly subject?: { readonly CN?: string | string[]; readonly O?: string | string[] };
  readonly ext_key_usage?: readonly string[];
}

/** What the authenticator sees of a request. */
export interface AuthnInput {
  /** The client's certificate, if it sent one. */
  readonly peerCertificate?: PeerCertificate;
  /** True when TLS verified the certificate's chain against the client CA. */
  readonly peerVerified: boolean;
  readonly authorizationHeader?: string;
}

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
export const TOKEN_CACHE_TTL_MS = 2 * 60_000;

function asList(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}

/** The certificate's user: only a verified chain, for client authentication, with a common name. */
export function userFromCertificate(input: AuthnInput): UserInfo | undefined {
  const cert = input.peerCertificate;
  if (cert?.subject === undefined || !input.peerVerified) return undefined;
  if (cert.ext_key_usage !== undefined && !cert.ext_key_usage.includes(CLIENT_AUTH)) return undefined;
  const name = asList(cert.subject.CN)[0] ?? '';
  return name === '' ? undefined : { name, groups: asList(cert.subject.O) };
}

/** The bearer token of an `Authorization` header, as the API server's bearer token reader takes it. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return match?.[1];
}

/** Authenticates requests; see this file's header. */
export class Authenticator {
  private readonly tokens: TtlCache<{ user: UserInfo | undefined }>;

  constructor(
    private readonly reviewer: TokenReviewer,
    clock: Clock,
  ) {
    this.tokens = new TtlCache(clock);
  }

  /** The request's user, or undefined (401). A TokenReview error counts as not authenticated. */
  async authenticate(input: AuthnInput): Promise<UserInfo | undefined> {
    const fromCert = userFromCertificate(input);
    if (fromCert !== undefined) return fromCert;
    const token = bearerToken(input.authorizationHeader);
    if (token === undefined) return undefined;
    const key = createHash('sha256').update(token).digest('hex');
    const cached = this.tokens.get(key);
    if (cached !== undefined) return cached.user;
    const user = await this.reviewer.review(token);
    this.tokens.set(key, { user }, TOKEN_CACHE_TTL_MS);
    return user;
  }
}
