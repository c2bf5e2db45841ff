import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MicroTime } from '../../kube/client.js';
import { apiStatusCode } from '../../util/api-errors.js';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { apiError, createFakeLeaseApi } from '../../test/doubles/fake-kube-api.js';
import { createNodeLease, NODE_LEASE_NAMESPACE, renewedLease } from './lease.js';

const KEY = `${NODE_LEASE_NAMESPACE}/worker-1`;

function setup(nodeUid?: string) {
  const clock = createFakeClock(Date.parse('2030-01-01T00:00:00Z'));
  const api = createFakeLeaseApi();
  let uid = nodeUid;
  const lease = createNodeLease({ api, nodeName: 'worker-1', clock, nodeUid: () => uid });
  return { clock, api, lease, setUid: (next: string) => (uid = next) };
}

function renewTimeOf(api: ReturnType<typeof createFakeLeaseApi>): number {
  const renewTime = api.leases.get(KEY)?.spec?.renewTime;
  assert.ok(renewTime instanceof Date);
  return renewTime.getTime();
}

describe('node lease', () => {
  it('creates the lease held by the node for 40 s, owned by the Node, when missing', async () => {
    const { api, lease } = setup('node-uid-1');
    await lease.renew();
    const stored = api.leases.get(KEY);
    assert.equal(stored?.spec?.holderIdentity, 'worker-1');
    assert.equal(stored.spec.leaseDurationSeconds, 40);
    assert.deepEqual(stored.metadata?.ownerReferences, [{ apiVersion: 'v1', kind: 'Node', name: 'worker-1', uid: 'node-uid-1' }]);
    assert.deepEqual(api.calls, ['readNamespacedLease', 'createNamespacedLease']);
  });

  it('renews with one update from the cached lease, moving renewTime to now', async () => {
    const { api, lease, clock } = setup('node-uid-1');
    await lease.renew();
    const first = renewTimeOf(api);
    await clock.advance(10_000);
    await lease.renew();
    assert.equal(renewTimeOf(api) - first, 10_000);
    assert.deepEqual(api.calls.slice(2), ['replaceNamespacedLease']);
  });

  it('re-reads and retries after a conflict, without losing fields others set', async () => {
    const { api, lease, clock } = setup('node-uid-1');
    await lease.renew();
    const stored = api.leases.get(KEY)!;
    // Someone else updates the lease: our cached resourceVersion is now stale.
    api.leases.set(KEY, { ...stored, metadata: { ...stored.metadata, resourceVersion: '99', labels: { x: 'y' } } });
    await clock.advance(10_000);
    await lease.renew();
    assert.deepEqual(api.calls.slice(2), ['replaceNamespacedLease', 'readNamespacedLease', 'replaceNamespacedLease']);
    assert.deepEqual(api.leases.get(KEY)?.metadata?.labels, { x: 'y' });
  });

  it('creates the lease again when it was deleted', async () => {
    const { api, lease } = setup('node-uid-1');
    await lease.renew();
    api.leases.clear();
    await lease.renew();
    assert.ok(api.leases.has(KEY));
    assert.deepEqual(api.calls.slice(2), ['replaceNamespacedLease', 'readNamespacedLease', 'createNamespacedLease']);
  });

  it('adds the owner reference once the Node UID becomes known', async () => {
    const { api, lease, setUid } = setup(undefined);
    await lease.renew();
    assert.equal(api.leases.get(KEY)?.metadata?.ownerReferences, undefined);
    setUid('node-uid-2');
    await lease.renew();
    assert.deepEqual(api.leases.get(KEY)?.metadata?.ownerReferences?.map((r) => r.uid), ['node-uid-2']);
  });

  it('surfaces errors other than conflict and not-found to the caller, and recovers after', async () => {
    const { api, lease } = setup('node-uid-1');
    api.failNext('readNamespacedLease', apiError(500, 'InternalError'));
    await assert.rejects(lease.renew(), (err: unknown) => apiStatusCode(err) === 500);
    await lease.renew();
    assert.ok(api.leases.has(KEY));
  });
});

describe('renewedLease', () => {
  it('writes renewTime as a MicroTime and points the Node owner reference at the current UID', () => {
    const lease = renewedLease(
      {
        metadata: {
          name: 'worker-1',
          ownerReferences: [
            { apiVersion: 'v1', kind: 'Node', name: 'worker-1', uid: 'old' },
            { apiVersion: 'example.com/v1', kind: 'Thing', name: 't', uid: 'x' },
          ],
        },
      },
      { nodeName: 'worker-1', durationSeconds: 40, now: Date.parse('2030-01-01T00:00:01.5Z'), nodeUid: 'new' },
    );
    assert.ok(lease.spec?.renewTime instanceof MicroTime);
    assert.equal(JSON.stringify(lease.spec.renewTime), '"2030-01-01T00:00:01.500000Z"');
    assert.deepEqual(lease.metadata?.ownerReferences?.map((r) => `${r.kind}/${r.uid}`), ['Thing/x', 'Node/new']);
  });
});
