/**
 * Which Redis users should exist, from the Nodes: a node whose Node carries a valid password hash
 * (REDIS_PASSWORD_SHA256_ANNOTATION, which only that node may write under NodeRestriction) gets
 * its user, confined to its own queue; the dashboard gets its user. A pure function of the Nodes
 * and the users Redis has, so every rule is a test case and the controller only applies the plan.
 */
import type { V1Node } from '@kubernetes/client-node';
import { DASHBOARD_USER, NODE_USER_PREFIX, REDIS_PASSWORD_SHA256_ANNOTATION, dashboardAclRules, isPasswordSha256, nodeAclRules, nodeRedisUser } from '../controllers/queue/redis-acl.js';

/** One `ACL SETUSER <user> ...rules`. */
export interface AclUser {
  readonly user: string;
  readonly rules: readonly string[];
}

/** What to change in Redis: users to set (from scratch), users to delete. */
export interface AclPlan {
  readonly set: readonly AclUser[];
  readonly delete: readonly string[];
}

/** The dashboard's user, when it has a password. */
export interface DashboardUser {
  readonly passwordHash: string;
  readonly allowActions: boolean;
}

/** The node users the Nodes call for (a Node without a valid hash has none). */
export function desiredNodeUsers(nodes: readonly V1Node[], prefix?: string): AclUser[] {
  return nodes.flatMap((node) => {
    const name = node.metadata?.name ?? '';
    const hash = node.metadata?.annotations?.[REDIS_PASSWORD_SHA256_ANNOTATION] ?? '';
    return name === '' || !isPasswordSha256(hash) ? [] : [{ user: nodeRedisUser(name), rules: nodeAclRules(name, hash, prefix) }];
  });
}

/**
 * Every desired user is set (ACL SETUSER with `reset` is idempotent: a restarted Redis, a changed
 * hash and an unchanged one take the same command); node users Redis has that no Node calls for
 * are deleted. Users this controller does not name (default, operators' own) are never touched.
 */
export function planAcl(input: { readonly nodes: readonly V1Node[]; readonly dashboard: DashboardUser | undefined; readonly existingUsers: readonly string[]; readonly prefix?: string }): AclPlan {
  const nodeUsers = desiredNodeUsers(input.nodes, input.prefix);
  const wanted = new Set(nodeUsers.map((u) => u.user));
  const dashboard = input.dashboard === undefined ? [] : [{ user: DASHBOARD_USER, rules: dashboardAclRules(input.dashboard.passwordHash, input.dashboard.allowActions, input.prefix) }];
  return {
    set: [...dashboard, ...nodeUsers],
    delete: input.existingUsers.filter((user) => user.startsWith(NODE_USER_PREFIX) && !wanted.has(user)),
  };
}
