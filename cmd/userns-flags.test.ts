import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FlagError } from '../util/flags.js';
import { parseUserNamespaceHostIds } from './userns-flags.js';

describe('--user-namespaces-host-ids', () => {
  it('looks the IDs up when unset, turns user namespaces off with none, takes FIRST:LENGTH', () => {
    assert.deepEqual(parseUserNamespaceHostIds(undefined), { kind: 'lookup' });
    assert.deepEqual(parseUserNamespaceHostIds(''), { kind: 'lookup' });
    assert.deepEqual(parseUserNamespaceHostIds('none'), { kind: 'off' });
    assert.deepEqual(parseUserNamespaceHostIds('2147483648:7208960'), { kind: 'range', firstId: 2147483648, length: 7208960 });
  });

  it('refuses anything else', () => {
    for (const bad of ['65536', '65536:', 'a:b', '-1:65536', '4294967296:65536', '4294901760:131072']) {
      assert.throws(() => parseUserNamespaceHostIds(bad), FlagError, bad);
    }
  });
});
