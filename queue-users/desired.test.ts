import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { REDIS_PASSWORD_SHA256_ANNOTATION, passwordSha256 } from '../controllers/queue/redis-acl.js';
import { planAcl } from './desired.js';

const HASH = passwordSha256('pw');
const node = (name: string, hash?: string): V1Node => ({ metadata: { name, ...(hash === undefined ? {} : { annotations: { [REDIS_PASSWORD_SHA256_ANNOTATION]: hash } }) } });

describe('planAcl', () => {
  it('sets a user per Node with a valid hash, the dashboard first, and deletes only node users no Node calls for', () => {
    const plan = planAcl({
      nodes: [node('a', HASH), node('b'), node('c', 'not-a-hash'), node('d', `${HASH} ~*`)],
      dashboard: { passwordHash: HASH, allowActions: false },
      existingUsers: ['default', 'operator', 'nodelet-dashboard', 'nodelet-node-a', 'nodelet-node-gone', 'nodelet-node-b'],
    });
    assert.deepEqual(plan.set.map((u) => u.user), ['nodelet-dashboard', 'nodelet-node-a']);
    assert.equal(plan.set[1]?.rules.includes('~nodelet:nodelet-reconcile-a:*'), true);
    assert.deepEqual(plan.delete, ['nodelet-node-gone', 'nodelet-node-b']);
  });

  it('makes no dashboard user without its password, and honours another key prefix', () => {
    const plan = planAcl({ nodes: [node('a', HASH)], dashboard: undefined, existingUsers: [], prefix: 'other' });
    assert.deepEqual(plan.set.map((u) => u.user), ['nodelet-node-a']);
    assert.equal(plan.set[0]?.rules.includes('~other:nodelet-reconcile-a:*'), true);
    assert.deepEqual(plan.delete, []);
  });
});
