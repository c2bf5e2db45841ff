import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MetricsRegistry } from '../util/metrics.js';
import { buildInfoLabels, goPlatform, IMPLEMENTED_FEATURES, registerBuildInfo } from './build-info-metrics.js';

describe('kubernetes_build_info and kubernetes_feature_enabled', () => {
  it('says nodelet’s own version and leaves the Go build facts empty', () => {
    assert.deepEqual(buildInfoLabels({ packageVersion: '0.1.0', gitCommit: 'abc' }, 'linux/amd64'), {
      major: '0', minor: '1', git_version: 'v0.1.0-nodelet', git_commit: 'abc', git_tree_state: '', build_date: '', go_version: '', compiler: '', platform: 'linux/amd64',
    });
    assert.equal(goPlatform('linux', 'x64'), 'linux/amd64');
    assert.equal(goPlatform('linux', 'arm64'), 'linux/arm64');
  });

  it('lists only the implemented gates, on, with the kubelet’s stage; label pairs sorted as the Go client writes them', () => {
    const registry = new MetricsRegistry();
    registerBuildInfo(registry, { packageVersion: '0.1.0', gitCommit: '' });
    const text = registry.text();
    assert.match(text, /^kubernetes_build_info\{build_date="",compiler="",git_commit="",git_tree_state="",git_version="v0\.1\.0-nodelet",go_version="",major="0",minor="1",platform="[^"]+"\} 1$/m);
    const features = text.split('\n').filter((l) => l.startsWith('kubernetes_feature_enabled{'));
    assert.equal(features.length, IMPLEMENTED_FEATURES.length);
    assert.ok(features.includes('kubernetes_feature_enabled{name="NodeLogQuery",stage=""} 1'));
    assert.ok(features.includes('kubernetes_feature_enabled{name="GracefulNodeShutdown",stage="BETA"} 1'));
    assert.ok(!features.some((l) => l.includes('EventedPLEG')), 'a gate nodelet does not implement is not listed');
  });
});
