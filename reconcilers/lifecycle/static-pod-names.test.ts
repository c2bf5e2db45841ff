import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PodKey } from '../../util/pod-key.js';
import { decideStaticPodStart, StaticPodNames, type StaticNameFacts, type StaticStartDecision } from './static-pod-names.js';

const all = (): boolean => true;

describe('decideStaticPodStart', () => {
  const cases: { name: string; facts: StaticNameFacts; uid: string; want: StaticStartDecision }[] = [
    { name: 'a free name, nobody waiting: it starts', facts: { holder: undefined, waiting: [], startable: all }, uid: 'a', want: { kind: 'start', waiting: [] } },
    { name: 'the holder asks again: it runs on', facts: { holder: 'a', waiting: ['b'], startable: all }, uid: 'a', want: { kind: 'start', waiting: ['b'] } },
    { name: 'another holds the name (an edited manifest): it waits, in line', facts: { holder: 'a', waiting: [], startable: all }, uid: 'b', want: { kind: 'wait', behind: 'a', waiting: ['b'] } },
    { name: 'a free name, another waited first: it waits behind it', facts: { holder: undefined, waiting: ['b'], startable: all }, uid: 'c', want: { kind: 'wait', behind: 'b', waiting: ['b', 'c'] } },
    { name: 'a free name, first in line: it starts and leaves the rest waiting', facts: { holder: undefined, waiting: ['b', 'c'], startable: all }, uid: 'b', want: { kind: 'start', waiting: ['c'] } },
    {
      name: 'a free name, the ones ahead are gone or stopping: they are skipped',
      facts: { holder: undefined, waiting: ['b', 'c', 'd'], startable: (uid) => uid === 'd' },
      uid: 'd',
      want: { kind: 'start', waiting: [] },
    },
    { name: 'held: the gone ones leave the line meanwhile', facts: { holder: 'a', waiting: ['b', 'c'], startable: (uid) => uid !== 'b' }, uid: 'c', want: { kind: 'wait', behind: 'a', waiting: ['c'] } },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.deepEqual(decideStaticPodStart(c.facts, c.uid), c.want);
    });
  }
});

describe('StaticPodNames', () => {
  const key = (uid: string): PodKey => ({ uid, namespace: 'ns', name: 'web-n1' });

  it('holds a full name from start until the pod terminates or is forgotten, and says so each time it lets go', () => {
    const released: string[] = [];
    const names = new StaticPodNames({ onReleased: (k) => released.push(k.uid) });
    assert.equal(names.tryStart(key('a'), all).kind, 'start');
    assert.equal(names.holderOf(key('a')), 'a');
    assert.equal(names.holderOf({ namespace: 'ns', name: 'other' }), undefined);
    assert.deepEqual(names.tryStart(key('b'), all), { kind: 'wait', behind: 'a', waiting: ['b'] }, 'the edited manifest waits');
    assert.equal(names.holderOf(key('b')), 'a', 'the old pod still holds the name (its mirror pod stays)');
    names.podTerminated(key('b'));
    assert.equal(names.holderOf(key('a')), 'a', 'a waiting pod lets go of nothing');
    assert.deepEqual(released, []);
    names.podForgotten(key('a'));
    assert.equal(names.holderOf(key('a')), undefined);
    assert.deepEqual(released, ['a']);
    assert.equal(names.tryStart(key('b'), all).kind, 'start');
    names.podTerminated(key('b'));
    names.podTerminated(key('b'));
    assert.deepEqual(released, ['a', 'b'], 'once');
    assert.equal(names.size(), 0);
  });

  it('forgets a waiting pod: the one behind it starts next', () => {
    const names = new StaticPodNames();
    names.tryStart(key('a'), all);
    names.tryStart(key('b'), all);
    names.tryStart(key('c'), all);
    names.podForgotten(key('b'));
    names.podForgotten(key('a'));
    assert.equal(names.tryStart(key('c'), () => false).kind, 'start');
    names.podForgotten(key('c'));
    assert.equal(names.size(), 0, 'nothing kept once every pod is forgotten');
  });
});
