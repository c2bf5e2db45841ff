import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFakeClock } from '../test/doubles/fake-clock.js';
import { ALLOWED_TTL_MS, DENIED_TTL_MS, forbiddenMessage, NodeAuthorizer, requestAttributes, type NodeAccess } from './authz.js';

describe('requestAttributes: the kubelet webhook mapping of a request to nodes/<subresource>', () => {
  const cases: readonly [string, string, string, string[]][] = [
    ['GET', '/containerLogs/ns/pod/c', 'get', ['proxy']],
    ['POST', '/exec/ns/pod/c', 'create', ['proxy']],
    ['POST', '/attach/ns/pod/c', 'create', ['proxy']],
    ['POST', '/portForward/ns/pod', 'create', ['proxy']],
    ['POST', '/run/ns/pod/c', 'create', ['proxy']],
    ['GET', '/pods', 'get', ['pods', 'proxy']],
    ['GET', '/runningpods/', 'get', ['pods', 'proxy']],
    ['GET', '/healthz', 'get', ['healthz', 'proxy']],
    ['GET', '/configz', 'get', ['configz', 'proxy']],
    ['GET', '/logs/', 'get', ['log']],
    ['GET', '/logs/syslog', 'get', ['log']],
    ['GET', '/stats/summary', 'get', ['stats']],
    ['GET', '/metrics', 'get', ['metrics']],
    ['GET', '/metrics/cadvisor', 'get', ['metrics']],
    ['PUT', '/nowhere', 'update', ['proxy']],
    ['PATCH', '/nowhere', 'patch', ['proxy']],
    ['DELETE', '/nowhere', 'delete', ['proxy']],
    // Not a subpath: /podsx is not /pods, /logsx not /logs/.
    ['GET', '/podsx', 'get', ['proxy']],
    ['GET', '/logsx', 'get', ['proxy']],
    ['OPTIONS', '/healthz', '', ['healthz', 'proxy']],
  ];
  for (const [method, path, verb, subresources] of cases) {
    it(`${method} ${path} → ${verb || '(no verb)'} ${subresources.join(', then ')}`, () => {
      assert.deepEqual(requestAttributes(method, path), { verb, subresources });
    });
  }

  it("words a denial as the kubelet's 403", () => {
    assert.equal(
      forbiddenMessage({ name: 'system:serviceaccount:ns:sa', groups: [] }, 'get', ['pods', 'proxy']),
      'Forbidden (user=system:serviceaccount:ns:sa, verb=get, resource=nodes, subresource=[pods proxy])',
    );
  });
});

describe('NodeAuthorizer', () => {
  const user = { name: 'alice', groups: ['devs'] };

  function reviewer(allow: (a: NodeAccess) => boolean): { asked: NodeAccess[]; allowed: (a: NodeAccess) => Promise<boolean> } {
    const asked: NodeAccess[] = [];
    return {
      asked,
      allowed: (a) => {
        asked.push(a);
        return Promise.resolve(allow(a));
      },
    };
  }

  it('tries each subresource in order, and any allowed one allows', async () => {
    const r = reviewer((a) => a.subresource === 'proxy');
    const authz = new NodeAuthorizer(r, 'node-1', createFakeClock());
    assert.deepEqual(await authz.authorize(user, 'GET', '/pods'), { allowed: true });
    assert.deepEqual(r.asked.map((a) => [a.verb, a.subresource, a.node]), [['get', 'pods', 'node-1'], ['get', 'proxy', 'node-1']]);
  });

  it('denies with the message naming every subresource tried', async () => {
    const authz = new NodeAuthorizer(reviewer(() => false), 'node-1', createFakeClock());
    assert.deepEqual(await authz.authorize(user, 'GET', '/pods'), { allowed: false, message: 'Forbidden (user=alice, verb=get, resource=nodes, subresource=[pods proxy])' });
  });

  it('caches an allow for 5 minutes and a deny for 30 seconds, per user and attributes', async () => {
    let allow = false;
    const r = reviewer(() => allow);
    const clock = createFakeClock();
    const authz = new NodeAuthorizer(r, 'node-1', clock);
    assert.equal((await authz.authorize(user, 'GET', '/containerLogs/a/b/c')).allowed, false);
    allow = true;
    await clock.advance(DENIED_TTL_MS - 1);
    assert.equal((await authz.authorize(user, 'GET', '/containerLogs/a/b/c')).allowed, false, 'the deny is still cached');
    assert.equal(r.asked.length, 1);
    await clock.advance(1);
    assert.equal((await authz.authorize(user, 'GET', '/containerLogs/a/b/c')).allowed, true, 'the deny expired');
    assert.equal(r.asked.length, 2);
    allow = false;
    await clock.advance(ALLOWED_TTL_MS - 1);
    assert.equal((await authz.authorize(user, 'GET', '/containerLogs/x/y/z')).allowed, true, 'the allow is cached (same attributes: nodes/proxy get)');
    assert.equal((await authz.authorize({ name: 'bob', groups: [] }, 'GET', '/containerLogs/x/y/z')).allowed, false, 'another user is asked anew');
    assert.equal(r.asked.length, 3);
    await clock.advance(1);
    assert.equal((await authz.authorize(user, 'GET', '/containerLogs/a/b/c')).allowed, false, 'the allow expired');
    assert.equal(r.asked.length, 4);
  });

  it('does not cache an error: it propagates, and the next request asks again', async () => {
    let fail = true;
    const asked: NodeAccess[] = [];
    const authz = new NodeAuthorizer({ allowed: (a) => { asked.push(a); return fail ? Promise.reject(new Error('api down')) : Promise.resolve(true); } }, 'n', createFakeClock());
    await assert.rejects(authz.authorize(user, 'GET', '/healthz'), /api down/);
    fail = false;
    assert.equal((await authz.authorize(user, 'GET', '/healthz')).allowed, true);
    assert.equal(asked.length, 2);
  });
});
