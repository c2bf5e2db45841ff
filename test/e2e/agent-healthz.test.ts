/**
 * The harness agent's local health endpoint (the kubelet's 127.0.0.1:10248 default), as the chart's
 * probes read it: live and ready while the agent runs its pods.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { requireCluster } from './helpers.js';

describe("the agent's local /healthz and /readyz", () => {
  it('answers both with every check passing, on loopback only', async () => {
    requireCluster();
    for (const path of ['/healthz', '/readyz']) {
      const response = await fetch(`http://127.0.0.1:10248${path}`);
      const body = await response.text();
      assert.equal(response.status, 200, body);
      assert.match(body, /^\[\+\]ping ok\n\[\+\]syncloop ok\n/);
      if (path === '/readyz') assert.match(body, /\[\+\]pod-source ok\n\[\+\]pleg ok\nreadyz check passed\n$/);
    }
    const node = process.env.NODE_IP ?? '';
    await assert.rejects(fetch(`http://${node}:10248/healthz`), 'not on the node IP');
  });
});
