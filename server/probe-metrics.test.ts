/** `/metrics/probes` as the kubelet's: families, labels, which results get a duration, forgetting. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createProbeMetrics } from './probe-metrics.js';

const series = { probeType: 'Liveness', container: 'app', pod: 'web', namespace: 'ns', podUid: 'u1' };

describe('/metrics/probes', () => {
  it('counts runs by result with the kubelet labels, durations only for successful and unknown runs', async () => {
    const probes = createProbeMetrics();
    probes.recorder.probed(series, 'success', 0.02);
    probes.recorder.probed(series, 'failure', 0.5);
    probes.recorder.probed(series, 'unknown', 0.2);
    const text = await probes.expose();
    assert.match(text, /^prober_probe_total\{probe_type="Liveness",result="successful",container="app",pod="web",namespace="ns",pod_uid="u1"\} 1$/m);
    assert.match(text, /^prober_probe_total\{probe_type="Liveness",result="failed",container="app",pod="web",namespace="ns",pod_uid="u1"\} 1$/m);
    assert.match(text, /^prober_probe_duration_seconds_count\{probe_type="Liveness",container="app",pod="web",namespace="ns"\} 2$/m);
    assert.match(text, /^prober_probe_duration_seconds_sum\{probe_type="Liveness",container="app",pod="web",namespace="ns"\} 0\.22/m);
    assert.match(text, /^# HELP prober_probe_total \[BETA\] /m);
    assert.match(text, /^process_start_time_seconds \d/m);
  });

  it("drops a finished worker's series and no other's", async () => {
    const probes = createProbeMetrics();
    const other = { ...series, pod: 'api', podUid: 'u2' };
    probes.recorder.probed(series, 'success', 0.01);
    probes.recorder.probed(other, 'success', 0.01);
    probes.recorder.forget(series);
    const text = await probes.expose();
    assert.doesNotMatch(text, /pod="web"/);
    assert.match(text, /pod="api"/);
  });
});
