/**
 * `/configz` shows the agent's settings as a KubeletConfiguration that `--config` reads back into
 * the same settings (a round trip from the kubelet control node's own file), with Go durations.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { dump } from 'js-yaml';
import { kubeletConfigurationOf } from './configz.js';
import { parseSettings, type AgentSettings } from './flags.js';
import { expandConfigFlag } from './kubelet-config.js';
import { formatGoDurationSeconds } from '../util/go-duration.js';

const REAL = path.join(import.meta.dirname, 'testdata', 'kubelet-config.yaml');

function settings(argv: readonly string[]): AgentSettings {
  const parsed = parseSettings(argv, {});
  assert.notEqual(parsed, 'help');
  return parsed as AgentSettings;
}

describe('/configz', () => {
  it('writes durations as Go does', () => {
    assert.deepEqual([0, 20, 90, 120, 300, 5400].map(formatGoDurationSeconds), ['0s', '20s', '1m30s', '2m0s', '5m0s', '1h30m0s']);
  });

  it('round-trips through --config: the settings read back from /configz are the settings it showed', () => {
    const extra = ['--eviction-soft', 'memory.available<1Gi', '--eviction-soft-grace-period', 'memory.available=1m30s', '--image-minimum-gc-age', '5m', '--image-maximum-gc-age', '168h', '--system-reserved', 'cpu=100m,memory=500Mi', '--seccomp-default', '--enable-system-log-query', '--shutdown-grace-period', '30s', '--shutdown-grace-period-critical-pods', '10s'];
    const first = settings(['--config', REAL, '--node-ip', '10.213.0.2', ...extra]);
    const shown = kubeletConfigurationOf(first);
    assert.equal(shown.kind, 'KubeletConfiguration');
    assert.equal(shown.imageMinimumGCAge, '5m0s');
    assert.equal(shown.imageMaximumGCAge, '168h0m0s');
    assert.equal(shown.enableSystemLogQuery, true);
    assert.deepEqual([shown.shutdownGracePeriod, shown.shutdownGracePeriodCriticalPods], ['30s', '10s']);
    const second = settings(['--node-ip', '10.213.0.2', ...expandConfigFlag(['--config', 'configz.yaml'], () => dump(shown))]);
    const { nodeName: _a, ...a } = first;
    const { nodeName: _b, ...b } = second;
    assert.deepEqual(b, a);
  });
});
