import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { containerIdOfLinkName, containerLogLinkName } from './log-link-names.js';

const ID = 'a'.repeat(64);

describe('containerLogLinkName', () => {
  it("is the kubelet's <pod>_<namespace>_<container>-<id>.log", () => {
    assert.equal(containerLogLinkName({ podName: 'web-0', podNamespace: 'shop', containerName: 'nginx', containerId: ID }), `web-0_shop_nginx-${ID}.log`);
  });

  it('is cut to 255 characters before the suffix, as ext4 needs and the kubelet does', () => {
    const name = containerLogLinkName({ podName: 'p'.repeat(253), podNamespace: 'n'.repeat(63), containerName: 'c'.repeat(63), containerId: ID });
    assert.equal(name.length, 255);
    assert.ok(name.endsWith('.log'));
    assert.equal(name.slice(0, 251), `${'p'.repeat(253)}_${'n'.repeat(63)}`.slice(0, 251));
  });
});

describe('containerIdOfLinkName', () => {
  it('reads the ID back from a link name, dashes in the pod and container names included', () => {
    assert.equal(containerIdOfLinkName(containerLogLinkName({ podName: 'my-pod-7f9c', podNamespace: 'kube-system', containerName: 'side-car', containerId: ID })), ID);
  });

  it('reads the prefix a cut name kept, when it is at least 6 characters', () => {
    assert.equal(containerIdOfLinkName('pod_ns_c-abcdef.log'), 'abcdef');
    assert.equal(containerIdOfLinkName('pod_ns_c-abcde.log'), undefined);
  });

  it('finds none in a name without the suffix or without a dash', () => {
    assert.equal(containerIdOfLinkName(`pod_ns_c-${ID}.txt`), undefined);
    assert.equal(containerIdOfLinkName(`pod_ns_c${ID}.log`), undefined);
  });
});
