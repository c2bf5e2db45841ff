/**
 * End to end: the node's `/metrics` through the API server's node proxy (`kubectl get --raw
 * /api/v1/nodes/<node>/proxy/metrics`), parsed by the Prometheus project's own text parser
 * (test/cluster/promparse: it must accept the whole text), before and after one new pod runs:
 * `kubelet_runtime_operations_total{operation_type="run_podsandbox"}` rose by exactly 1 (as many
 * duration observations), `kubelet_pod_start_duration_seconds_count` by exactly 1, successful
 * reconcile runs rose; `kubelet_running_pods` equals the ready sandboxes of this node crictl
 * lists, `kubelet_running_containers{container_state="running"}` its running containers (read
 * between two scrapes that agree: PLEG relists every second); the PLEG histograms grow within 10 s; the queue
 * depth is there; the agent's `process_*` and `nodejs_*` figures match what /proc shows of its
 * process. `/metrics/probes`: a readiness probe's runs by result, its durations, its series gone
 * with the pod. Prints the figures.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parsePrometheus, seriesValue, type ParsedFamilies } from '../cluster/promparse.js';
import { NODE_NAME, apply, busyboxPod, createNamespace, crictl, deleteNamespace, eventually, kubectl, requireCluster, uniqueName, waitForPhase } from './helpers.js';

const NODE_LABEL = `nodelet.dev/node=${NODE_NAME}`;

async function scrape(): Promise<ParsedFamilies> {
  return parsePrometheus(await kubectl(['get', '--raw', `/api/v1/nodes/${NODE_NAME}/proxy/metrics`]));
}

/** A counter's or gauge's value (0 when the series is absent: a labelled family starts absent). */
function value(families: ParsedFamilies, family: string, labels: Readonly<Record<string, string>> = {}): number {
  const v = seriesValue(families, family, labels)?.value;
  return v === undefined ? 0 : Number(v);
}

/** A histogram's observation count and sum (0 when absent). */
function histogram(families: ParsedFamilies, family: string, labels: Readonly<Record<string, string>> = {}): { count: number; sum: number } {
  const s = seriesValue(families, family, labels);
  return { count: s?.count ?? 0, sum: Number(s?.sum ?? 0) };
}

async function count(args: readonly string[]): Promise<number> {
  return (await crictl(args)).split('\n').filter((l) => l.trim() !== '').length;
}

describe('the node server /metrics on the test cluster', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    // A just-restarted agent opens its node server once its pod sources have synced.
    await eventually('the node server to answer /metrics', () => scrape(), 60_000);
    namespace = await createNamespace('e2e-metrics');
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('parses, and counts one new pod: one sandbox run, one pod start, running pods and containers as crictl sees them', async () => {
    const before = await scrape();
    const name = uniqueName('metrics');
    await apply(busyboxPod({ name, namespace, nodeName: NODE_NAME, script: 'sleep 3600' }));
    await waitForPhase(namespace, name, 'Running');
    // The pod start is measured when the Running status is handed over; wait for it to show.
    const after = await eventually('the pod start to be counted', async () => {
      const now = await scrape();
      return histogram(now, 'kubelet_pod_start_duration_seconds').count > histogram(before, 'kubelet_pod_start_duration_seconds').count ? now : undefined;
    }, 30_000);
    const sandbox = { operation_type: 'run_podsandbox' };
    const runsBefore = value(before, 'kubelet_runtime_operations_total', sandbox);
    const runsAfter = value(after, 'kubelet_runtime_operations_total', sandbox);
    const start = { before: histogram(before, 'kubelet_pod_start_duration_seconds'), after: histogram(after, 'kubelet_pod_start_duration_seconds') };
    const sandboxDuration = histogram(after, 'kubelet_runtime_operations_duration_seconds', sandbox);
    console.log(`[metrics] run_podsandbox total ${String(runsBefore)} -> ${String(runsAfter)}; its duration count ${String(sandboxDuration.count)}, sum ${sandboxDuration.sum.toFixed(3)} s`);
    console.log(`[metrics] pod start count ${String(start.before.count)} -> ${String(start.after.count)}; this pod ${(start.after.sum - start.before.sum).toFixed(3)} s from first seen to Running`);
    assert.equal(runsAfter - runsBefore, 1, 'exactly one sandbox for one new pod');
    assert.equal(sandboxDuration.count, runsAfter, 'one duration observation per operation');
    assert.equal(start.after.count - start.before.count, 1, 'exactly one pod start');
    assert.ok(start.after.sum - start.before.sum > 0, 'the pod took some time to start');
    const success = { outcome: 'success' };
    assert.ok(histogram(after, 'nodelet_reconcile_job_duration_seconds', success).count > histogram(before, 'nodelet_reconcile_job_duration_seconds', success).count, 'reconcile runs were counted');
    // PLEG relists once a second, independent of the pod: a fast start can fall between two
    // relists, so scrape until one more is counted (the loop is stalled if none comes in 10 s).
    const relistsBefore = histogram(before, 'kubelet_pleg_relist_duration_seconds').count;
    const relisted = await eventually('a PLEG relist to be counted', async () => {
      const now = await scrape();
      return histogram(now, 'kubelet_pleg_relist_duration_seconds').count > relistsBefore ? now : undefined;
    }, 10_000);
    assert.ok(histogram(relisted, 'kubelet_pleg_relist_interval_seconds').count > 0, 'relist intervals were counted');
    assert.equal(value(after, 'kubelet_node_name', { node: NODE_NAME }), 1);
    assert.ok(after.nodelet_reconcile_queue_jobs !== undefined, 'the queue depth is read at the scrape');
  });

  it('running pods and containers equal what the runtime shows for this node', async () => {
    // The gauges follow the runtime at each relist (1 s): pods of earlier tests still being torn
    // down move both sides, so wait until two scrapes around crictl agree with each other and with it.
    const agreed = await eventually('two scrapes around crictl to agree with it', async () => {
      const first = await scrape();
      const readyPods = await count(['pods', '--state', 'ready', '--label', NODE_LABEL, '-q']);
      const runningContainers = await count(['ps', '--state', 'running', '--label', NODE_LABEL, '-q']);
      const second = await scrape();
      const pods = [value(first, 'kubelet_running_pods'), value(second, 'kubelet_running_pods')];
      const containers = [value(first, 'kubelet_running_containers', { container_state: 'running' }), value(second, 'kubelet_running_containers', { container_state: 'running' })];
      const stable = pods[0] === pods[1] && containers[0] === containers[1] && pods[0] === readyPods && containers[0] === runningContainers;
      // Thrown, so a timeout names the last disagreement.
      if (!stable) throw new Error(`running pods ${String(pods)} vs crictl ${readyPods}, running containers ${String(containers)} vs crictl ${runningContainers}`);
      return stable ? { readyPods, runningContainers, pods: pods[0] ?? -1, containers: containers[0] ?? -1, families: second } : undefined;
    }, 30_000);
    const relist = histogram(agreed.families, 'kubelet_pleg_relist_duration_seconds');
    const interval = histogram(agreed.families, 'kubelet_pleg_relist_interval_seconds');
    console.log(`[metrics] running pods ${String(agreed.pods)} (crictl ready sandboxes ${String(agreed.readyPods)}), running containers ${String(agreed.containers)} (crictl ${String(agreed.runningContainers)})`);
    console.log(`[metrics] PLEG: ${String(relist.count)} relists, mean ${(relist.sum / Math.max(1, relist.count) * 1000).toFixed(1)} ms; mean interval ${(interval.sum / Math.max(1, interval.count)).toFixed(3)} s`);
    assert.ok(agreed.readyPods >= 1, 'the pod of the first test still runs');
    assert.equal(agreed.pods, agreed.readyPods);
    assert.equal(agreed.containers, agreed.runningContainers);
  });

  it("reports the agent process's CPU, resident memory, start time and open files as /proc shows them", async () => {
    const pid = (await readFile(path.join(process.env.CLUSTER_DIR ?? '', 'pids', 'nodelet.pid'), 'utf8')).split('\n')[0]?.trim() ?? '';
    assert.match(pid, /^\d+$/, 'the agent pid file');
    /** utime + stime in seconds (USER_HZ 100), VmRSS in bytes, open descriptors, start time (s since the epoch). */
    const proc = async () => {
      const stat = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.split(' ') ?? [];
      const status = await readFile(`/proc/${pid}/status`, 'utf8');
      const rssKiB = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]);
      const uptime = Number((await readFile('/proc/uptime', 'utf8')).split(' ')[0]);
      const startedSecondsAgo = uptime - Number(stat[19]) / 100;
      return { cpu: (Number(stat[11]) + Number(stat[12])) / 100, rss: rssKiB * 1024, fds: (await readdir(`/proc/${pid}/fd`)).length, start: Date.now() / 1000 - startedSecondsAgo };
    };
    const before = await proc();
    const families = await scrape();
    const after = await proc();
    const cpu = value(families, 'process_cpu_seconds_total');
    const rss = value(families, 'process_resident_memory_bytes');
    const heapUsed = value(families, 'nodejs_heap_size_used_bytes');
    const heapTotal = value(families, 'nodejs_heap_size_total_bytes');
    console.log(`[metrics] agent process: cpu ${cpu} s (/proc ${before.cpu}..${after.cpu}), rss ${(rss / 2 ** 20).toFixed(1)} MiB (/proc ${(before.rss / 2 ** 20).toFixed(1)}..${(after.rss / 2 ** 20).toFixed(1)}), heap used ${(heapUsed / 2 ** 20).toFixed(1)} of ${(heapTotal / 2 ** 20).toFixed(1)} MiB, open fds ${value(families, 'process_open_fds')} (/proc ${before.fds}..${after.fds})`);
    // /proc counts in ticks of 10 ms; the agent reads the same clock with microseconds.
    assert.ok(cpu >= before.cpu - 0.02 && cpu <= after.cpu + 0.02, `process_cpu_seconds_total ${cpu} outside /proc's ${before.cpu}..${after.cpu}`);
    const [rssLow, rssHigh] = [Math.min(before.rss, after.rss), Math.max(before.rss, after.rss)];
    assert.ok(rss >= rssLow * 0.8 && rss <= rssHigh * 1.2, `process_resident_memory_bytes ${rss} far from /proc's ${rssLow}..${rssHigh}`);
    assert.ok(heapUsed > 0 && heapUsed <= heapTotal && heapTotal < rss, 'heap used ≤ heap total < resident set');
    const fds = value(families, 'process_open_fds');
    assert.ok(fds >= Math.min(before.fds, after.fds) - 20 && fds <= Math.max(before.fds, after.fds) + 20, `process_open_fds ${fds} far from /proc's ${before.fds}..${after.fds}`);
    assert.ok(value(families, 'process_max_fds') >= fds);
    assert.ok(Math.abs(value(families, 'process_start_time_seconds') - before.start) < 5, 'the start time agrees with /proc within 5 s');
  });

  it("serves /metrics/probes as the kubelet: each probe run by result, durations of the successful ones, the worker's series gone with its pod", async () => {
    const name = uniqueName('probed');
    const pod = busyboxPod({ name, namespace, nodeName: NODE_NAME, script: 'sleep 4; touch /tmp/ready; exec sleep 3600' }) as { spec: { containers: Record<string, unknown>[] } };
    const container = pod.spec.containers[0] ?? {};
    container.readinessProbe = { exec: { command: ['cat', '/tmp/ready'] }, periodSeconds: 1, failureThreshold: 1000 };
    await apply(pod);
    const running = await waitForPhase(namespace, name, 'Running');
    const labels = { probe_type: 'Readiness', container: 'main', pod: name, namespace };
    const scrapeProbes = async (): Promise<ParsedFamilies> => parsePrometheus(await kubectl(['get', '--raw', `/api/v1/nodes/${NODE_NAME}/proxy/metrics/probes`]));
    const seen = await eventually('successful readiness probes after failed ones', async () => {
      const families = await scrapeProbes();
      const ok = value(families, 'prober_probe_total', { ...labels, pod_uid: running.metadata?.uid ?? '', result: 'successful' });
      const failed = value(families, 'prober_probe_total', { ...labels, pod_uid: running.metadata?.uid ?? '', result: 'failed' });
      return ok >= 2 && failed >= 1 ? { families, ok, failed } : undefined;
    }, 60_000);
    const durations = histogram(seen.families, 'prober_probe_duration_seconds', labels);
    const unknown = value(seen.families, 'prober_probe_total', { ...labels, pod_uid: running.metadata?.uid ?? '', result: 'unknown' });
    assert.equal(durations.count, seen.ok + unknown, 'a duration for every successful or unknown run, none for the failed ones');
    assert.ok(durations.sum > 0 && durations.sum / durations.count < 5, `mean probe time ${durations.sum / durations.count} s`);
    assert.ok(value(seen.families, 'process_start_time_seconds') > 0);
    console.log(`/metrics/probes: ${seen.failed} failed, ${seen.ok} successful readiness probes; mean ${(durations.sum / durations.count).toFixed(3)} s`);
    await kubectl(['delete', 'pod', '-n', namespace, name, '--wait=true']);
    await eventually("the pod's probe series gone", async () => (seriesValue(await scrapeProbes(), 'prober_probe_total', { ...labels, pod_uid: running.metadata?.uid ?? '', result: 'successful' }) === undefined ? true : undefined));
  });
});
