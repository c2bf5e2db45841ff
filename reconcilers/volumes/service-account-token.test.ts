import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { createFakeVolumeSourceApi } from '../../test/doubles/fake-volume-source-api.js';
import { createServiceAccountTokens, tokenNeedsRefresh } from './service-account-token.js';

const T0 = new Date('2024-05-01T00:00:00Z');
const minutes = (n: number): Date => new Date(T0.getTime() + n * 60_000);

const pod: V1Pod = {
  metadata: { name: 'web-0', namespace: 'shop', uid: 'uid-1' },
  spec: { serviceAccountName: 'web-sa', containers: [] },
};

describe('tokenNeedsRefresh', () => {
  const token = { token: 't', expiresAt: minutes(60), expirationSeconds: 3600 };

  it('keeps a token up to 80% of its lifetime', () => {
    assert.equal(tokenNeedsRefresh(token, minutes(0)), false);
    assert.equal(tokenNeedsRefresh(token, minutes(47.9)), false);
  });

  it('refreshes a token past 80% of its lifetime, and an expired one', () => {
    assert.equal(tokenNeedsRefresh(token, minutes(48.1)), true);
    assert.equal(tokenNeedsRefresh(token, minutes(61)), true);
  });

  it('refreshes a long-lived token once it is a day old', () => {
    const yearLong = { token: 't', expiresAt: minutes(365 * 24 * 60), expirationSeconds: 365 * 24 * 3600 };
    assert.equal(tokenNeedsRefresh(yearLong, minutes(23 * 60)), false);
    assert.equal(tokenNeedsRefresh(yearLong, minutes(24 * 60 + 1)), true);
  });
});

describe('createServiceAccountTokens', () => {
  it('requests a token for the pod service account bound to the pod', async () => {
    const api = createFakeVolumeSourceApi({ clock: () => T0 });
    const tokens = createServiceAccountTokens({ api, clock: () => T0 });

    await tokens.token({ pod, volumeName: 'kube-api-access-x', expirationSeconds: 3600 });

    assert.deepEqual(api.tokenRequests, [
      { namespace: 'shop', serviceAccountName: 'web-sa', expirationSeconds: 3600, podName: 'web-0', podUid: 'uid-1' },
    ]);
  });

  it('reuses the cached token until 80% of its lifetime, then requests a new one', async () => {
    let now = T0;
    const api = createFakeVolumeSourceApi({ clock: () => now });
    const tokens = createServiceAccountTokens({ api, clock: () => now });
    const lookup = { pod, volumeName: 'v', expirationSeconds: 3600 };

    const first = await tokens.token(lookup);
    now = minutes(47);
    const reused = await tokens.token(lookup);
    now = minutes(49);
    const refreshed = await tokens.token(lookup);

    assert.equal(reused, first);
    assert.notEqual(refreshed, first);
    assert.equal(api.tokenRequests.length, 2);
  });

  it('caches tokens separately per audience and forgets them with the pod', async () => {
    const api = createFakeVolumeSourceApi({ clock: () => T0 });
    const tokens = createServiceAccountTokens({ api, clock: () => T0 });

    const defaultAudience = await tokens.token({ pod, volumeName: 'v', expirationSeconds: 3600 });
    const vault = await tokens.token({ pod, volumeName: 'v', audience: 'vault', expirationSeconds: 3600 });
    await tokens.token({ pod, volumeName: 'v', audience: 'vault', expirationSeconds: 3600 });
    tokens.forgetPod('uid-1');
    await tokens.token({ pod, volumeName: 'v', expirationSeconds: 3600 });

    assert.notEqual(defaultAudience, vault);
    assert.deepEqual(
      api.tokenRequests.map((r) => r.audience),
      [undefined, 'vault', undefined],
    );
  });

  it('uses the default service account when the pod names none', async () => {
    const api = createFakeVolumeSourceApi();
    const tokens = createServiceAccountTokens({ api, clock: () => T0 });
    const bare: V1Pod = { metadata: { name: 'p', namespace: 'n', uid: 'u' }, spec: { containers: [] } };

    await tokens.token({ pod: bare, volumeName: 'v', expirationSeconds: 600 });

    assert.equal(api.tokenRequests[0]?.serviceAccountName, 'default');
  });
});
