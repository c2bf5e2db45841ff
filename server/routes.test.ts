/** Route matching, and which of the node's routes take GET alone (the kubelet 1.37's read-only APIs). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFakeClock } from '../test/doubles/fake-clock.js';
import { nodeRoutes } from './handlers.js';
import { matchRoute } from './routes.js';
import type { RouteDeps } from './handlers.js';

const DEPS: RouteDeps = {
  pods: { list: () => [] },
  runtime: {} as RouteDeps['runtime'],
  clock: createFakeClock(),
  followPollMs: 250,
  proxyTimeoutMs: 1000,
  runTimeoutSeconds: 10,
  nodeLogDir: '/var/log',
};

describe('the node routes\' methods', () => {
  const routes = nodeRoutes(DEPS);

  it('answers any method but GET on /pods, /containerLogs and /logs with 405 naming GET, HEAD included (GETOnlyRestfulFilter)', () => {
    for (const path of ['/pods', '/containerLogs/ns/pod/c', '/logs/syslog']) {
      assert.equal(matchRoute(routes, 'GET', path).kind, 'found', path);
      for (const method of ['HEAD', 'POST', 'PUT', 'DELETE']) assert.deepEqual(matchRoute(routes, method, path), { kind: 'method-not-allowed', allow: 'GET' }, `${method} ${path}`);
    }
  });

  it('keeps HEAD as GET on the other read routes, and a wrong method elsewhere a plain 405', () => {
    assert.equal(matchRoute(routes, 'HEAD', '/healthz').kind, 'found');
    assert.deepEqual(matchRoute(routes, 'DELETE', '/healthz'), { kind: 'method-not-allowed' });
    assert.deepEqual(matchRoute(routes, 'GET', '/nothing'), { kind: 'not-found' });
  });
});
