/**
 * Who may touch which queue in a shared Redis: one Redis ACL user per node, confined to the keys of
 * that node's queue, and one for the dashboard over every queue. The node's agent keeps its own
 * password (node-redis-password.ts) and publishes only its SHA-256 on its own Node (an annotation
 * only that node may write, under NodeRestriction); `nodelet redis-users` turns each Node's hash
 * into its user with the admin password, which no node holds.
 *
 * What a node's user may run: every command but Redis' `@dangerous` ones (FLUSHALL, CONFIG, KEYS,
 * DEBUG, MONITOR, most of CLIENT...), plus the few of them BullMQ and ioredis need: INFO (the
 * version and readiness checks), CLIENT SETNAME/GETNAME (named worker connections) and CLIENT LIST
 * (orphan recovery finds live workers by name; it shows connections, not data). Keys: only
 * `<prefix>:<its queue>:*`, and no command that lists key names (SCAN, RANDOMKEY). Redis checks the
 * keys of every command a script runs too, so BullMQ's scripts stay inside the queue. No Pub/Sub
 * channel. What ACLs cannot bound: memory; a node can fill Redis with its own queue's keys.
 */
import { createHash } from 'node:crypto';
import { reconcileQueueName } from './redis.js';

/** The annotation on a Node carrying the SHA-256 (hex) of its agent's Redis password. */
export const REDIS_PASSWORD_SHA256_ANNOTATION = 'nodelet.dev/redis-password-sha256';
/** The key prefix of every queue (ReconcileQueue's default). */
export const DEFAULT_QUEUE_PREFIX = 'nodelet';
/** Redis ACL users of nodes start with this; `nodelet redis-users` manages exactly those. */
export const NODE_USER_PREFIX = 'nodelet-node-';
/** The dashboard's Redis user. */
export const DASHBOARD_USER = 'nodelet-dashboard';

/** The Redis user of a node's agent. Node names are DNS subdomains: valid in a user name as they are. */
export function nodeRedisUser(nodeName: string): string {
  return `${NODE_USER_PREFIX}${nodeName}`;
}

/** The hex SHA-256 of a password, as Redis ACL's `#<hash>` rule takes it. */
export function passwordSha256(password: string): string {
  return createHash('sha256').update(password, 'utf8').digest('hex');
}

/** True for a 64-digit lowercase hex SHA-256 (what `#<hash>` accepts). */
export function isPasswordSha256(value: string): boolean {
  return /^[0-9a-f]{64}$/.test(value);
}

/**
 * Commands that name keys without being checked against key patterns: SCAN and RANDOMKEY would
 * show a node the other queues' key names (pod UIDs in job IDs). No queue client needs them.
 */
const NAME_LISTINGS = ['-scan', '-randomkey'];

/** The commands of `@dangerous` a queue client needs (see this file's header). */
const QUEUE_CLIENT_EXTRAS = ['+info', '+client|setname', '+client|getname', '+client|list', '+client|id'];

/** `ACL SETUSER <user> ...rules` for a node's agent, from scratch (`reset`), enabled with its password hash. */
export function nodeAclRules(nodeName: string, passwordHash: string, prefix: string = DEFAULT_QUEUE_PREFIX): string[] {
  return ['reset', 'on', `#${passwordHash}`, `~${prefix}:${reconcileQueueName(nodeName)}:*`, 'resetchannels', '+@all', '-@dangerous', ...NAME_LISTINGS, ...QUEUE_CLIENT_EXTRAS];
}

/**
 * `ACL SETUSER` rules for the dashboard: every queue's keys; reads only (its scripts too), SCAN
 * to find the queues, unless it may act on jobs (`--allow-actions`).
 */
export function dashboardAclRules(passwordHash: string, allowActions: boolean, prefix: string = DEFAULT_QUEUE_PREFIX): string[] {
  const commands = allowActions ? ['+@all', '-@dangerous'] : ['+@read', '+@connection', '+evalsha', '+eval', '+script|load', '-@write'];
  return ['reset', 'on', `#${passwordHash}`, `~${prefix}:*`, 'resetchannels', ...commands, '+scan', ...QUEUE_CLIENT_EXTRAS];
}
