import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FlagError, parseSettings } from './flags.js';

describe('log rotation flags', () => {
  it("default to the kubelet's 10Mi and 5 files", () => {
    const s = parseSettings(['--cri-endpoint', 'x'], {});
    assert.ok(s !== 'help');
    assert.deepEqual(s.logRotation, { containerLogMaxSize: '10Mi', containerLogMaxFiles: 5 });
  });

  it('read both flags', () => {
    const s = parseSettings(['--cri-endpoint', 'x', '--container-log-max-size', '512Ki', '--container-log-max-files', '2'], {});
    assert.ok(s !== 'help');
    assert.deepEqual(s.logRotation, { containerLogMaxSize: '512Ki', containerLogMaxFiles: 2 });
  });

  it('refuse a size that is not a positive whole quantity, and fewer than 2 files', () => {
    for (const extra of [['--container-log-max-size', '10MB'], ['--container-log-max-size', '0'], ['--container-log-max-size', '1.5Mi'], ['--container-log-max-files', '1'], ['--container-log-max-files', 'x']]) {
      assert.throws(() => parseSettings(['--cri-endpoint', 'x', ...extra], {}), (e: unknown) => e instanceof FlagError, extra.join(' '));
    }
  });
});
