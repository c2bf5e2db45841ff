/**
 * Stand-ins for the API server's TokenReview and SubjectAccessReview, for the node server's tests:
 * tokens are a fixed table, access is a predicate; every question is recorded so a test can count
 * how often the API server would have been asked (caching).
 */
import type { TokenReviewer, UserInfo } from '../../server/authn.js';
import type { AccessReviewer, NodeAccess } from '../../server/authz.js';

export class FakeTokenReviewer implements TokenReviewer {
  readonly asked: string[] = [];
  /** When set, every review fails (the API server is unreachable). */
  failWith: Error | undefined;

  constructor(private readonly tokens: ReadonlyMap<string, UserInfo>) {}

  review(token: string): Promise<UserInfo | undefined> {
    this.asked.push(token);
    if (this.failWith !== undefined) return Promise.reject(this.failWith);
    return Promise.resolve(this.tokens.get(token));
  }
}

export class FakeAccessReviewer implements AccessReviewer {
  readonly asked: NodeAccess[] = [];
  /** When set, every review fails. */
  failWith: Error | undefined;

  constructor(public allow: (access: NodeAccess) => boolean) {}

  allowed(access: NodeAccess): Promise<boolean> {
    this.asked.push(access);
    if (this.failWith !== undefined) return Promise.reject(this.failWith);
    return Promise.resolve(this.allow(access));
  }
}
