/**
 * What a request may do, as the kubelet's webhook authorization decides it: each request maps to
 * `nodes/<subresource>` of this node with a verb from its HTTP method, and the API server answers a
 * SubjectAccessReview for it. The mapping is the kubelet's (pkg/kubelet/server/auth.go) with fine
 * grained authorization on (KubeletFineGrainedAuthz): `/pods` and `/runningpods/` try
 * `nodes/pods`, then `nodes/proxy`; `/healthz` tries `nodes/healthz`, then `nodes/proxy`; `/stats/`
 * is `nodes/stats`, `/metrics` `nodes/metrics`, `/logs/` `nodes/log`; everything else, the
 * container logs, exec, attach, port-forward and run included, is `nodes/proxy`. Any allowed
 * attribute set allows the request. Answers are cached as the kubelet's defaults: an allow for
 * 5 minutes, a deny for 30 seconds; an error is not cached (it is a 500).
 */
import type { Clock } from '../util/clock.js';
import type { UserInfo } from './authn.js';
import { TtlCache } from './ttl-cache.js';

/** One question for the API server: may `user` `verb` `nodes/<subresource>` named `node`? */
export interface NodeAccess {
  readonly user: UserInfo;
  readonly verb: string;
  readonly subresource: string;
  readonly node: string;
}

/** Asks the API server (SubjectAccessReview). */
export interface AccessReviewer {
  /** True when allowed. Throws on API errors. */
  allowed(access: NodeAccess): Promise<boolean>;
}

export const ALLOWED_TTL_MS = 5 * 60_000;
export const DENIED_TTL_MS = 30_000;

const VERBS: Readonly<Record<string, string>> = { POST: 'create', GET: 'get', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };

/** True when `path` is `prefix` or below it (the kubelet's isSubpath). */
function isSubpath(path: string, prefix: string): boolean {
  const base = prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
  return path === base || path.startsWith(`${base}/`);
}

function fineGrained(path: string): string[] {
  if (isSubpath(path, '/pods')) return ['pods'];
  if (isSubpath(path, '/healthz')) return ['healthz'];
  if (isSubpath(path, '/configz')) return ['configz'];
  if (isSubpath(path, '/runningpods/')) return ['pods'];
  return [];
}

function coarse(path: string): string {
  const table: readonly [string, string][] = [
    ['/stats/', 'stats'],
    ['/metrics', 'metrics'],
    ['/logs/', 'log'],
    ['/checkpoint', 'checkpoint'],
    ['/statusz', 'statusz'],
    ['/flagz', 'configz'],
  ];
  return table.find(([prefix]) => isSubpath(path, prefix))?.[1] ?? 'proxy';
}

/** The verb and the subresources, in order of trial, of a request to `path` by `method`. */
export function requestAttributes(method: string, path: string): { verb: string; subresources: string[] } {
  // An unknown method maps to the empty verb, as the kubelet's (no rule allows it).
  return { verb: VERBS[method] ?? '', subresources: [...fineGrained(path), coarse(path)] };
}

/** The kubelet's 403 text: `Forbidden (user=…, verb=…, resource=nodes, subresource=[…])`. */
export function forbiddenMessage(user: UserInfo, verb: string, subresources: readonly string[]): string {
  return `Forbidden (user=${user.name}, verb=${verb}, resource=nodes, subresource=[${subresources.join(' ')}])`;
}

/** The decision on one request. */
export type Decision = { readonly allowed: true } | { readonly allowed: false; readonly message: string };

function cacheKey(access: NodeAccess): string {
  const { user } = access;
  return JSON.stringify([user.name, user.uid ?? '', [...user.groups].sort(), user.extra ?? {}, access.verb, access.subresource, access.node]);
}

/** Authorizes requests; see this file's header. */
export class NodeAuthorizer {
  private readonly decisions: TtlCache<boolean>;

  constructor(
    private readonly reviewer: AccessReviewer,
    private readonly nodeName: string,
    clock: Clock,
  ) {
    this.decisions = new TtlCache(clock);
  }

  /** Allowed, or denied with the kubelet's message. Throws when the API server cannot answer. */
  async authorize(user: UserInfo, method: string, path: string): Promise<Decision> {
    const { verb, subresources } = requestAttributes(method, path);
    for (const subresource of subresources) {
      if (await this.allowedOne({ user, verb, subresource, node: this.nodeName })) return { allowed: true };
    }
    return { allowed: false, message: forbiddenMessage(user, verb, subresources) };
  }

  private async allowedOne(access: NodeAccess): Promise<boolean> {
    const key = cacheKey(access);
    const cached = this.decisions.get(key);
    if (cached !== undefined) return cached;
    const allowed = await this.reviewer.allowed(access);
    this.decisions.set(key, allowed, allowed ? ALLOWED_TTL_MS : DENIED_TTL_MS);
    return allowed;
  }
}
