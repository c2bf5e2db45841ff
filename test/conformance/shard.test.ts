import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { focusRegex, isBadShardError, parseShard, selectShard } from './shard.js';

describe('parseShard', () => {
  it('reads i/n', () => {
    assert.deepEqual(parseShard('2/5'), { index: 2, count: 5 });
  });
  for (const bad of ['0/3', '4/3', '1', '1/0', 'a/b', '-1/2']) {
    it(`refuses '${bad}' with a BadShardError`, () => {
      assert.throws(() => parseShard(bad), isBadShardError);
    });
  }
});

describe('selectShard', () => {
  const names = ['e', 'b', 'a', 'd', 'c', 'b', 'g', 'f'];
  it('deals the sorted, de-duplicated names round-robin: every name in exactly one shard', () => {
    const shards = [1, 2, 3].map((index) => selectShard(names, { index, count: 3 }));
    assert.deepEqual(shards, [['a', 'd', 'g'], ['b', 'e'], ['c', 'f']]);
    assert.deepEqual(shards.flat().sort(), ['a', 'b', 'c', 'd', 'e', 'f', 'g']);
  });
  it('does not depend on the order it is given the names in', () => {
    assert.deepEqual(selectShard([...names].reverse(), { index: 2, count: 3 }), ['b', 'e']);
  });
});

describe('focusRegex', () => {
  const names = ['[sig-node] Pods should get a host IP [NodeConformance] [Conformance]', 'x (y) a.b*c?'];
  // Ginkgo matches focus against "<suite description> <full test name>".
  const suite = 'Kubernetes e2e suite';
  it('matches each given name exactly, after the suite description, with regex characters taken literally', () => {
    const re = new RegExp(focusRegex(names, suite));
    for (const n of names) assert.ok(re.test(`${suite} ${n}`), n);
    assert.equal(re.test(names[0] ?? ''), false, 'the suite description leads');
    assert.equal(re.test(`${suite} x (y) aXb*c?`), false, 'a dot in a name is literal');
    assert.equal(re.test(`${suite} ${names[0]} and more`), false, 'anchored: a longer name is not pulled in');
    assert.equal(re.test(`${suite} [sig-node] Pods`), false, 'anchored: a prefix is not matched');
  });
  it('matches nothing for an empty selection', () => {
    const re = new RegExp(focusRegex([], suite));
    assert.equal(['', 'a', `${suite} [sig-node] x`, `${suite} `].some((n) => re.test(n)), false);
  });
});
