/**
 * The chart's agent.kubeAPIQPS / agent.kubeAPIBurst, rendered (`helm template`, no cluster): the
 * kubelet's defaults (50, 100) reach the agent's own flag parser, given values too, and the schema
 * refuses what the kubelet refuses (a negative or fractional value, a burst of 0 with a QPS).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1DaemonSet } from '@kubernetes/client-node';
import { parseSettings } from '../../cmd/flags.js';
import { containerOf, expandArgs, oneOf, renderChart } from './helm-chart-helpers.js';

async function kubeApiOf(set: readonly string[]): Promise<unknown> {
  const ds = oneOf<V1DaemonSet>(await renderChart({ set: [...set] }), 'DaemonSet');
  const settings = parseSettings(expandArgs((containerOf(ds, 'agent').args ?? []).slice(1), { NODE_NAME: 'w', NODE_IP: '192.0.2.10' }), {});
  assert.ok(settings !== 'help');
  return settings.kubeApi;
}

describe("the chart's API rate limit for the agent", () => {
  it("passes the kubelet's defaults, and the values given", async () => {
    assert.deepEqual(await kubeApiOf([]), { qps: 50, burst: 100 });
    assert.deepEqual(await kubeApiOf(['agent.kubeAPIQPS=20', 'agent.kubeAPIBurst=40']), { qps: 20, burst: 40 });
  });

  it('refuses on the schema a negative or fractional value, and a burst of 0 with a QPS above 0 (client-go refuses it)', async () => {
    await assert.rejects(renderChart({ set: ['agent.kubeAPIQPS=-1'] }));
    await assert.rejects(renderChart({ set: ['agent.kubeAPIBurst=2.5'] }));
    await assert.rejects(renderChart({ set: ['agent.kubeAPIBurst=0'] }));
    assert.deepEqual(await kubeApiOf(['agent.kubeAPIQPS=0', 'agent.kubeAPIBurst=0']), { qps: 0, burst: 0 }, "the kubelet's 0/0: 5 QPS, burst 10 per group-version");
  });
});
