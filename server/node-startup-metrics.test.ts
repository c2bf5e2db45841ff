import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MetricsRegistry } from '../util/metrics.js';
import { nodeStartupMetrics } from './node-startup-metrics.js';

function value(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

describe('node startup metrics', () => {
  it('measures boot → start → first attempt → creation → first Ready once each, as the kubelet’s tracker', () => {
    const registry = new MetricsRegistry();
    let now = 100_000;
    const startup = nodeStartupMetrics(registry, { bootMs: 10_000, agentStartMs: 90_000, now: () => now });
    startup.nodeReady();
    assert.equal(value(registry.text(), 'kubelet_node_startup_duration_seconds'), 0, 'nothing before registration');
    startup.registrationAttempted();
    now = 102_000;
    startup.registrationAttempted();
    startup.registeredNewNode();
    now = 105_000;
    startup.nodeReady();
    now = 200_000;
    startup.nodeReady();
    const text = registry.text();
    assert.equal(value(text, 'kubelet_node_startup_pre_kubelet_duration_seconds'), 80);
    assert.equal(value(text, 'kubelet_node_startup_pre_registration_duration_seconds'), 10);
    assert.equal(value(text, 'kubelet_node_startup_registration_duration_seconds'), 2);
    assert.equal(value(text, 'kubelet_node_startup_post_registration_duration_seconds'), 3);
    assert.equal(value(text, 'kubelet_node_startup_duration_seconds'), 95);
  });

  it('leaves every figure at 0 when the Node already existed', () => {
    const registry = new MetricsRegistry();
    const startup = nodeStartupMetrics(registry, { bootMs: 0, agentStartMs: 1000, now: () => 5000 });
    startup.registrationAttempted();
    startup.nodeReady();
    for (const name of ['pre_kubelet', 'pre_registration', 'registration', 'post_registration']) assert.equal(value(registry.text(), `kubelet_node_startup_${name}_duration_seconds`), 0);
    assert.equal(value(registry.text(), 'kubelet_node_startup_duration_seconds'), 0);
  });
});
