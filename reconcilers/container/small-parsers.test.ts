import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { expandVars } from './expand-vars.js';
import { InvalidImageReferenceError, normalizeImageReference } from '../images/image-reference.js';
import { pullPolicyOf } from '../images/image-puller.js';
import { parseMilliCpu, parseQuantity } from '../model/quantity.js';

describe('image references', () => {
  const cases: [string, string][] = [
    ['busybox', 'docker.io/library/busybox:latest'],
    ['busybox:1.35', 'docker.io/library/busybox:1.35'],
    ['library/busybox:1.35', 'docker.io/library/busybox:1.35'],
    ['registry.k8s.io/pause:3.10', 'registry.k8s.io/pause:3.10'],
    ['localhost:5000/team/app', 'localhost:5000/team/app:latest'],
    ['quay.io/org/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef', 'quay.io/org/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef'],
  ];
  for (const [input, expected] of cases) {
    it(`normalises ${input}`, () => { assert.equal(normalizeImageReference(input), expected); });
  }
  for (const bad of ['Busybox:1.35', 'busybox:', 'bad image', 'a//b', '']) {
    it(`refuses ${JSON.stringify(bad)} as an invalid reference`, () => { assert.throws(() => normalizeImageReference(bad), InvalidImageReferenceError); });
  }
});

describe('default pull policy', () => {
  it('is Always for latest or untagged images and IfNotPresent for tagged ones', () => {
    assert.equal(pullPolicyOf({ name: 'a', image: 'busybox' }), 'Always');
    assert.equal(pullPolicyOf({ name: 'a', image: 'busybox:latest' }), 'Always');
    assert.equal(pullPolicyOf({ name: 'a', image: 'busybox:1.35' }), 'IfNotPresent');
    assert.equal(pullPolicyOf({ name: 'a', image: 'busybox:1.35', imagePullPolicy: 'Never' }), 'Never');
  });
});

describe('$(VAR) expansion', () => {
  const vars = new Map([['A', 'one'], ['B', 'two']]);
  const lookup = (name: string) => vars.get(name);
  it('replaces defined variables', () => { assert.equal(expandVars('$(A)-$(B)', lookup), 'one-two'); });
  it('leaves undefined references as written', () => { assert.equal(expandVars('$(C)', lookup), '$(C)'); });
  it('turns $$ into a literal $', () => { assert.equal(expandVars('$$(A)', lookup), '$(A)'); });
  it('keeps an unterminated reference', () => { assert.equal(expandVars('x$(A', lookup), 'x$(A'); });
});

describe('quantities', () => {
  it('parses binary, decimal and exponent suffixes', () => {
    assert.equal(parseQuantity('64Mi'), 64 * 2 ** 20);
    assert.equal(parseQuantity('1G'), 1e9);
    assert.equal(parseQuantity('1e3'), 1000);
    assert.equal(parseMilliCpu('250m'), 250);
    assert.equal(parseMilliCpu('1.5'), 1500);
  });
  it('refuses garbage', () => { assert.throws(() => parseQuantity('lots')); });
});
