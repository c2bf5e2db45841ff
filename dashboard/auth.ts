/**
 * Request authentication and the guards around writes. One shared token, accepted two ways so
 * both scripts and browsers work: `Authorization: Bearer <token>`, or HTTP basic authentication
 * with any user name and the token as password (the browser's own login prompt). Compared in
 * constant time: both sides are hashed first, so neither content nor length leaks through timing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { DashboardAuth } from './settings.js';

/** The realm browsers show in their login prompt. */
export const AUTH_REALM = 'nodelet';

/** True when the `Authorization` header carries `token` as a bearer token or a basic-auth password. */
export function isAuthorized(header: string | undefined, token: string): boolean {
  const presented = presentedSecret(header);
  return presented !== undefined && sameSecret(presented, token);
}

/** The secret in an `Authorization` header: the bearer token, or the basic-auth password. */
export function presentedSecret(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^(\S+)\s+(\S+)\s*$/.exec(header);
  if (match === null) return undefined;
  const [, scheme = '', value = ''] = match;
  switch (scheme.toLowerCase()) {
    case 'bearer':
      return value;
    case 'basic': {
      const decoded = Buffer.from(value, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      return colon < 0 ? undefined : decoded.slice(colon + 1);
    }
    default:
      return undefined;
  }
}

function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

function digest(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

/** Express middleware enforcing `auth`; answers 401 with a basic-auth challenge. */
export function authenticate(auth: DashboardAuth): RequestHandler {
  if (auth.kind === 'none') {
    return (_req, _res, next) => {
      next();
    };
  }
  const { token } = auth;
  return (req: Request, res: Response, next: NextFunction) => {
    if (isAuthorized(req.headers.authorization, token)) {
      next();
      return;
    }
    res.set('WWW-Authenticate', `Basic realm="${AUTH_REALM}", charset="UTF-8"`);
    res.status(401).type('text/plain').send('authentication required\n');
  };
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Refuses every request that could change something: all of them while read-only, and, when
 * actions are allowed, those a browser sends from another site (a page elsewhere cannot make a
 * logged-in browser retry or clean jobs: basic credentials are sent along automatically).
 * bull-board's `readOnlyMode` hides and refuses its own actions too; this is the second lock.
 */
export function guardWrites(allowActions: boolean): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    if (SAFE_METHODS.has(req.method)) {
      next();
      return;
    }
    if (!allowActions) {
      res.status(403).json({ error: 'the dashboard is read-only; start it with --allow-actions to allow changes' });
      return;
    }
    if (isCrossSite(req)) {
      res.status(403).json({ error: 'cross-site requests may not change anything' });
      return;
    }
    next();
  };
}

/** True when a browser says the request comes from another origin. */
export function isCrossSite(req: Pick<Request, 'headers'>): boolean {
  const fetchSite = req.headers['sec-fetch-site'];
  if (fetchSite !== undefined && fetchSite !== 'same-origin' && fetchSite !== 'none') return true;
  const origin = req.headers.origin;
  if (origin === undefined || origin === 'null') return origin === 'null';
  try {
    return new URL(origin).host !== req.headers.host;
  } catch {
    return true;
  }
}
