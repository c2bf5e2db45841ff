/**
 * The node's `/metrics` text, as `createNodeMetrics` writes it with every family populated
 * (label values with quotes, backslashes and newlines; an infinite gauge; every histogram),
 * accepted by the Prometheus project's own text parser (github.com/prometheus/common/expfmt, built
 * from Go modules by test/cluster/build-promparse.sh), which reads back the same families, types
 * and figures. Needs the Go toolchain (and the module proxy or cache on the first build), not the
 * cluster. Also: a broken line is refused by that parser, so acceptance means something.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createNodeMetrics } from '../../server/node-metrics.js';
import { systemClock } from '../../util/clock.js';
import { MetricsRegistry } from '../../util/metrics.js';
import { parsePrometheus, seriesValue } from '../cluster/promparse.js';

describe('the /metrics exposition through the Prometheus text parser', () => {
  it('parses, with the families, types and figures recorded', async () => {
    const metrics = createNodeMetrics({ nodeName: 'node-"1"\\\n', clock: systemClock });
    metrics.watchQueue({ counts: () => Promise.resolve({ waiting: 4, active: 1, delayed: 0, failed: 0, completed: 0 }) });
    metrics.cri.operation({ operation: 'run_podsandbox', seconds: 0.31, failed: false });
    metrics.cri.operation({ operation: 'pull_image', seconds: 2000, failed: true });
    metrics.pleg.relisted({ durationSeconds: 0.012, intervalSeconds: 1.004, startedAtMs: 1_700_000_000_500, counts: { runningPods: 3, containersByState: { created: 1, running: 4, exited: 2, unknown: 0 } } });
    metrics.podStarts.podStarted(7.5);
    metrics.runs.runFinished({ outcome: 'requeue', seconds: 0.05, retry: false });
    metrics.runs.runFinished({ outcome: 'error', seconds: 1.5, retry: true });
    metrics.evictions.evicted('nodefs.available');
    metrics.lifecycle.httpFallback();
    metrics.restClient.requestDone({ method: 'GET', host: '10.0.0.1:6443', code: '200', seconds: 0.02, requestBytes: 0, responseBytes: 900, watch: false });
    metrics.restClient.requestDone({ method: 'PATCH', host: '10.0.0.1:6443', code: '<error>', seconds: 60, requestBytes: 300, watch: false });
    metrics.http.requestStarted('GET', '/metrics/resource')();
    metrics.http.requestStarted('POST', '/exec/ns/pod/c');
    metrics.pods.sandboxCreating();
    metrics.pods.podAdmitted({ spec: { containers: [{ name: 'a' }, { name: 'b' }, { name: 'c', resources: { requests: { cpu: '100m' } } }] } });
    metrics.pods.statusSynced(0.4);
    metrics.pods.containerStarting('init_container');
    metrics.pods.containerFailed('container', 'ErrImagePull');
    metrics.pods.containerTerminated({ containerType: 'container', exitCode: 137, reason: 'OOMKilled' });
    metrics.pods.sandboxRun({ runtimeHandler: '', seconds: 0.8, failed: true });
    metrics.pods.ensured({ pullPolicy: 'Always', presentLocally: undefined, pullRequired: true });
    metrics.pods.mustPullChecked('credentialPolicyAllowed');
    metrics.watchPods({ desired: () => [], isStatic: () => false, hasMirror: () => false, working: () => [{ uid: 'u', phase: 'terminating', admitted: false }], resizesInProgress: () => 0 });
    metrics.nodeStartup.registrationAttempted();
    metrics.nodeStartup.registeredNewNode();
    const text = await metrics.expose();
    const parsed = await parsePrometheus(text);
    console.log(`[metrics] ${String(Buffer.byteLength(text))} bytes, ${String(Object.keys(parsed).length)} families parsed by expfmt`);
    const types = Object.fromEntries(Object.entries(parsed).map(([name, f]) => [name, f.type]));
    assert.deepEqual(types, {
      kubelet_active_pods: 'GAUGE',
      kubelet_containers_per_pod_count: 'HISTOGRAM',
      kubelet_desired_pods: 'GAUGE',
      kubelet_evictions: 'COUNTER',
      kubelet_graceful_shutdown_end_time_seconds: 'GAUGE',
      kubelet_graceful_shutdown_start_time_seconds: 'GAUGE',
      kubelet_http_inflight_requests: 'GAUGE',
      kubelet_http_requests_duration_seconds: 'HISTOGRAM',
      kubelet_http_requests_total: 'COUNTER',
      kubelet_image_manager_ensure_image_requests_total: 'COUNTER',
      kubelet_image_volume_mounted_errors_total: 'COUNTER',
      kubelet_image_volume_mounted_succeed_total: 'COUNTER',
      kubelet_image_volume_requested_total: 'COUNTER',
      kubelet_imagemanager_image_mustpull_checks_total: 'COUNTER',
      kubelet_lifecycle_handler_http_fallbacks_total: 'COUNTER',
      kubelet_managed_ephemeral_containers: 'GAUGE',
      kubelet_metrics_provider: 'GAUGE',
      kubelet_mirror_pods: 'GAUGE',
      kubelet_node_name: 'GAUGE',
      kubelet_node_startup_duration_seconds: 'GAUGE',
      kubelet_node_startup_post_registration_duration_seconds: 'GAUGE',
      kubelet_node_startup_pre_kubelet_duration_seconds: 'GAUGE',
      kubelet_node_startup_pre_registration_duration_seconds: 'GAUGE',
      kubelet_node_startup_registration_duration_seconds: 'GAUGE',
      kubelet_orphaned_runtime_pods_total: 'COUNTER',
      kubelet_pleg_discard_events: 'COUNTER',
      kubelet_pleg_last_seen_seconds: 'GAUGE',
      kubelet_pleg_relist_duration_seconds: 'HISTOGRAM',
      kubelet_pleg_relist_interval_seconds: 'HISTOGRAM',
      kubelet_pod_in_progress_resizes: 'GAUGE',
      kubelet_pod_level_resources_admission_total: 'COUNTER',
      kubelet_pod_start_duration_seconds: 'HISTOGRAM',
      kubelet_pod_status_sync_duration_seconds: 'HISTOGRAM',
      kubelet_restarted_pods_total: 'COUNTER',
      kubelet_running_containers: 'GAUGE',
      kubelet_run_podsandbox_duration_seconds: 'HISTOGRAM',
      kubelet_run_podsandbox_errors_total: 'COUNTER',
      kubelet_running_pods: 'GAUGE',
      kubelet_runtime_operations_duration_seconds: 'HISTOGRAM',
      kubelet_runtime_operations_errors_total: 'COUNTER',
      kubelet_runtime_operations_total: 'COUNTER',
      kubelet_sleep_action_terminated_early_total: 'COUNTER',
      kubelet_started_containers_errors_total: 'COUNTER',
      kubelet_started_containers_total: 'COUNTER',
      kubelet_started_pods_errors_total: 'COUNTER',
      kubelet_started_pods_total: 'COUNTER',
      kubelet_started_user_namespaced_pods_errors_total: 'COUNTER',
      kubelet_started_user_namespaced_pods_total: 'COUNTER',
      kubelet_terminated_containers_total: 'COUNTER',
      kubelet_working_pods: 'GAUGE',
      kubernetes_build_info: 'GAUGE',
      kubernetes_feature_enabled: 'GAUGE',
      nodejs_external_memory_bytes: 'GAUGE',
      nodejs_heap_size_total_bytes: 'GAUGE',
      nodejs_heap_size_used_bytes: 'GAUGE',
      nodelet_reconcile_job_duration_seconds: 'HISTOGRAM',
      nodelet_reconcile_queue_jobs: 'GAUGE',
      nodelet_reconcile_retries_total: 'COUNTER',
      process_cpu_seconds_total: 'COUNTER',
      process_max_fds: 'GAUGE',
      process_network_receive_bytes_total: 'COUNTER',
      process_network_transmit_bytes_total: 'COUNTER',
      process_open_fds: 'GAUGE',
      process_resident_memory_bytes: 'GAUGE',
      process_start_time_seconds: 'GAUGE',
      process_virtual_memory_bytes: 'GAUGE',
      process_virtual_memory_max_bytes: 'GAUGE',
      rest_client_request_duration_seconds: 'HISTOGRAM',
      rest_client_request_size_bytes: 'HISTOGRAM',
      rest_client_requests_total: 'COUNTER',
      rest_client_response_size_bytes: 'HISTOGRAM',
    });
    assert.equal(seriesValue(parsed, 'kubelet_node_name')?.labels.node, 'node-"1"\\\n', 'escaped label value read back intact');
    assert.equal(seriesValue(parsed, 'kubelet_runtime_operations_total', { operation_type: 'run_podsandbox' })?.value, '1');
    assert.equal(seriesValue(parsed, 'kubelet_runtime_operations_errors_total', { operation_type: 'pull_image' })?.value, '1');
    const pull = seriesValue(parsed, 'kubelet_runtime_operations_duration_seconds', { operation_type: 'pull_image' });
    assert.equal(pull?.count, 1);
    assert.equal(pull?.buckets?.length, 15, '14 kubelet buckets and +Inf');
    assert.deepEqual(pull?.buckets?.at(-2), { le: '745.0580596923828', count: 0 }, 'above the largest bucket: counted only by +Inf');
    assert.deepEqual(pull?.buckets?.at(-1), { le: '+Inf', count: 1 });
    assert.equal(seriesValue(parsed, 'kubelet_running_containers', { container_state: 'running' })?.value, '4');
    assert.equal(seriesValue(parsed, 'kubelet_running_pods')?.value, '3');
    const start = seriesValue(parsed, 'kubelet_pod_start_duration_seconds');
    assert.deepEqual([start?.count, start?.sum, start?.buckets?.length], [1, '7.5', 26]);
    assert.equal(seriesValue(parsed, 'kubelet_pleg_relist_interval_seconds')?.buckets?.length, 12);
    assert.equal(seriesValue(parsed, 'nodelet_reconcile_queue_jobs', { state: 'waiting' })?.value, '4');
    assert.equal(seriesValue(parsed, 'nodelet_reconcile_retries_total')?.value, '1');
    assert.equal(seriesValue(parsed, 'kubelet_evictions', { eviction_signal: 'nodefs.available' })?.value, '1');
    assert.equal(seriesValue(parsed, 'kubelet_lifecycle_handler_http_fallbacks_total')?.value, '1');
    assert.equal(seriesValue(parsed, 'rest_client_requests_total', { code: '<error>', host: '10.0.0.1:6443', method: 'PATCH' })?.value, '1');
    assert.equal(seriesValue(parsed, 'rest_client_request_duration_seconds', { host: '10.0.0.1:6443', verb: 'GET' })?.buckets?.length, 13, '12 client-go buckets and +Inf');
    assert.equal(seriesValue(parsed, 'kubelet_http_inflight_requests', { long_running: 'true', method: 'POST', path: 'exec', server_type: 'readwrite' })?.value, '1');
    assert.equal(seriesValue(parsed, 'kubelet_working_pods', { config: 'runtime_only', lifecycle: 'terminating', static: 'unknown' })?.value, '1');
    assert.equal(seriesValue(parsed, 'kubelet_containers_per_pod_count')?.buckets?.length, 6);
    assert.equal(seriesValue(parsed, 'kubelet_started_pods_total')?.value, '1');
    assert.equal(seriesValue(parsed, 'kubelet_metrics_provider', { provider: 'cri' })?.value, '1');
    assert.equal(seriesValue(parsed, 'kubelet_pod_level_resources_admission_total', { config_mode: 'container_level', qos_class: 'burstable' })?.value, '1');
    assert.equal(seriesValue(parsed, 'kubelet_terminated_containers_total', { container_type: 'container', exit_code: '137', reason: 'OOMKilled' })?.value, '1');
    assert.equal(seriesValue(parsed, 'kubelet_run_podsandbox_errors_total', { runtime_handler: '' })?.value, '1');
    assert.equal(seriesValue(parsed, 'kubelet_image_manager_ensure_image_requests_total', { present_locally: 'unknown', pull_policy: 'always', pull_required: 'true' })?.value, '1');
  });

  it('special values parse; a broken exposition is refused by the same parser', async () => {
    const registry = new MetricsRegistry();
    registry.gauge({ name: 'g', help: 'x', labelNames: ['v'] }).set({ v: 'a' }, Infinity);
    registry.gauge({ name: 'g2', help: 'x' }).set({}, -Infinity);
    const parsed = await parsePrometheus(registry.text());
    assert.equal(seriesValue(parsed, 'g')?.value, '+Inf');
    assert.equal(seriesValue(parsed, 'g2')?.value, '-Inf');
    await assert.rejects(parsePrometheus('# TYPE a counter\na{b="unterminated} 1\n'), /promparse exited 1/);
    await assert.rejects(parsePrometheus('# TYPE a counter\na 1\n# TYPE a gauge\n'), /promparse exited 1/);
    await assert.rejects(parsePrometheus('# TYPE h histogram\nh_bucket{le="x"} 1\n'), /promparse exited 1/);
  });
});
