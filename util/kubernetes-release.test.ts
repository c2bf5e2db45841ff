/** The release nodelet follows is the one its test cluster and kubelet control run. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { FOLLOWED_KUBERNETES_MINOR } from './kubernetes-release.js';

describe('FOLLOWED_KUBERNETES_MINOR', () => {
  it('is the minor release of test/cluster/versions.env KUBERNETES_VERSION', () => {
    const pins = readFileSync(new URL('../test/cluster/versions.env', import.meta.url), 'utf8');
    const version = /^KUBERNETES_VERSION=v(\d+\.\d+)\.\d+$/m.exec(pins)?.[1];
    assert.equal(FOLLOWED_KUBERNETES_MINOR, version);
  });
});
