import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { basePod } from '../../test/doubles/pod-fixtures.js';
import { dynamicResourcesRefusal } from './runtime-support.js';

describe('what the node cannot give a pod', () => {
  it('refuses resource claims, naming them', () => {
    const pod = basePod((p) => { p.spec!.resourceClaims = [{ name: 'gpu', resourceClaimName: 'c1' }, { name: 'nic', resourceClaimTemplateName: 't' }]; });
    assert.equal(dynamicResourcesRefusal(pod), 'nodelet has no dynamic resource allocation (no DRA driver is registered on this node): cannot prepare resource claims "gpu", "nic"');
    assert.equal(dynamicResourcesRefusal(basePod((p) => { p.spec!.resourceClaims = []; })), undefined);
    assert.equal(dynamicResourcesRefusal(basePod()), undefined);
  });
});
