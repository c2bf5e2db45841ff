import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { basePod } from '../../test/doubles/pod-fixtures.js';
import { dynamicResourcesRefusal, userNamespaceRefusal } from './runtime-support.js';

describe('what the node cannot give a pod', () => {
  it('refuses hostUsers false with the kubelet user-namespace manager message, naming the handler', () => {
    assert.equal(userNamespaceRefusal(basePod((p) => { p.spec!.hostUsers = false; })), 'RuntimeClass handler "" does not support user namespaces');
    assert.equal(userNamespaceRefusal(basePod((p) => { p.spec!.hostUsers = false; p.spec!.runtimeClassName = 'kata'; })), 'RuntimeClass handler "kata" does not support user namespaces');
    assert.equal(userNamespaceRefusal(basePod((p) => { p.spec!.hostUsers = true; })), undefined);
    assert.equal(userNamespaceRefusal(basePod()), undefined);
  });

  it('refuses resource claims, naming them', () => {
    const pod = basePod((p) => { p.spec!.resourceClaims = [{ name: 'gpu', resourceClaimName: 'c1' }, { name: 'nic', resourceClaimTemplateName: 't' }]; });
    assert.equal(dynamicResourcesRefusal(pod), 'nodelet has no dynamic resource allocation (no DRA driver is registered on this node): cannot prepare resource claims "gpu", "nic"');
    assert.equal(dynamicResourcesRefusal(basePod((p) => { p.spec!.resourceClaims = []; })), undefined);
    assert.equal(dynamicResourcesRefusal(basePod()), undefined);
  });
});
