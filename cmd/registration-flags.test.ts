import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FlagError, parseSettings } from './flags.js';
import { isRegistrationFlagError, parseNodeLabels, parseTaints } from './registration-flags.js';

describe('parseTaints', () => {
  it('reads key=value:Effect and key:Effect items, in order', () => {
    assert.deepEqual(parseTaints('nodelet.dev/agent=true:NoSchedule, dedicated:NoExecute'), [
      { key: 'nodelet.dev/agent', value: 'true', effect: 'NoSchedule' },
      { key: 'dedicated', effect: 'NoExecute' },
    ]);
  });

  it('reads an empty value as an empty string, not as no value', () => {
    assert.deepEqual(parseTaints('a=:PreferNoSchedule'), [{ key: 'a', value: '', effect: 'PreferNoSchedule' }]);
  });

  it('yields no taints for an empty flag', () => {
    assert.deepEqual(parseTaints(''), []);
  });

  it('refuses an item without an effect', () => {
    assert.throws(() => parseTaints('nodelet.dev/agent=true'), { name: 'RegistrationFlagError', message: /has no effect/ });
  });

  it('refuses an effect the API server does not know', () => {
    assert.throws(() => parseTaints('a=b:NoRun'), { name: 'RegistrationFlagError', message: /effect "NoRun"/ });
  });

  it('refuses an invalid key or value', () => {
    assert.throws(() => parseTaints('bad key=x:NoSchedule'), isRegistrationFlagError);
    assert.throws(() => parseTaints('k=-x-:NoSchedule'), isRegistrationFlagError);
  });

  it('refuses the same key and effect twice', () => {
    assert.throws(() => parseTaints('a=1:NoSchedule,a=2:NoSchedule'), /a:NoSchedule is given twice/);
  });
});

describe('parseNodeLabels', () => {
  it('reads key=value items', () => {
    assert.deepEqual(parseNodeLabels('nodelet.dev/agent=true,zone=a'), { 'nodelet.dev/agent': 'true', zone: 'a' });
  });

  it('refuses an item without a value separator', () => {
    assert.throws(() => parseNodeLabels('nodelet.dev/agent'), /is not key=value/);
  });

  it('refuses a label NodeRestriction forbids a node to set on itself', () => {
    assert.throws(() => parseNodeLabels('node-role.kubernetes.io/worker='), /may not set these labels on itself: node-role.kubernetes.io\/worker/);
  });

  it('refuses a repeated key', () => {
    assert.throws(() => parseNodeLabels('a=1,a=2'), /a is given twice/);
  });
});

describe('parseSettings with registration flags', () => {
  it('carries labels and taints into the settings', () => {
    const s = parseSettings(['--cri-endpoint', 'x', '--node-labels=nodelet.dev/agent=true', '--register-with-taints=nodelet.dev/agent=true:NoSchedule'], {});
    assert.ok(s !== 'help');
    assert.deepEqual(s.nodeLabels, { 'nodelet.dev/agent': 'true' });
    assert.deepEqual(s.registerWithTaints, [{ key: 'nodelet.dev/agent', value: 'true', effect: 'NoSchedule' }]);
  });

  it('defaults to no extra labels and no taints', () => {
    const s = parseSettings(['--cri-endpoint', 'x'], {});
    assert.ok(s !== 'help');
    assert.deepEqual(s.nodeLabels, {});
    assert.deepEqual(s.registerWithTaints, []);
  });

  it('reports a malformed taint as a FlagError, so the command prints usage', () => {
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--register-with-taints', 'a=b'], {}), FlagError);
  });
});
