import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MetricsRegistry } from '../util/metrics.js';
import { httpMetrics, httpRequestLabels, urlRootPath } from './http-metrics.js';

describe('kubelet_http metrics', () => {
  it('labels a request by its method and the root of its path, bucketed as the kubelet buckets them', () => {
    assert.equal(urlRootPath('/metrics/resource'), 'metrics/resource');
    assert.equal(urlRootPath('/containerLogs/ns/pod/c'), 'containerLogs');
    assert.deepEqual(httpRequestLabels('GET', '/metrics'), { method: 'GET', path: 'metrics', server_type: 'readwrite', long_running: 'false' });
    assert.deepEqual(httpRequestLabels('POST', '/exec/ns/pod/c'), { method: 'POST', path: 'exec', server_type: 'readwrite', long_running: 'true' });
    // The kubelet's long-running set spells it `portforward`: its `portForward` bucket is not long-running.
    assert.equal(httpRequestLabels('GET', '/portForward/ns/pod').long_running, 'false');
    assert.deepEqual(httpRequestLabels('BREW', '/secret/thing'), { method: 'other', path: 'other', server_type: 'readwrite', long_running: 'false' });
  });

  it('counts a request when it arrives, holds it in flight until it ends, then observes its duration once', () => {
    const registry = new MetricsRegistry();
    let now = 1_000;
    const metrics = httpMetrics(registry, () => now);
    const done = metrics.requestStarted('GET', '/pods');
    const labels = 'long_running="false",method="GET",path="pods",server_type="readwrite"';
    assert.match(registry.text(), new RegExp(`kubelet_http_inflight_requests\\{${labels}\\} 1`));
    assert.match(registry.text(), new RegExp(`kubelet_http_requests_total\\{${labels}\\} 1`));
    now += 300;
    done();
    done();
    const text = registry.text();
    assert.match(text, new RegExp(`kubelet_http_inflight_requests\\{${labels}\\} 0`));
    assert.match(text, new RegExp(`kubelet_http_requests_duration_seconds_sum\\{${labels}\\} 0.3`));
    assert.match(text, new RegExp(`kubelet_http_requests_duration_seconds_count\\{${labels}\\} 1`));
  });
});
