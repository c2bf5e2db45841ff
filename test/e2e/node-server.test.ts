/**
 * End to end: the node server as users meet it. `kubectl logs` goes through the API server to
 * the node server on the node's InternalIP:10250 (client certificate of the API server, checked
 * against the cluster CA; authorized by SubjectAccessReview), so every `kubectl logs` below proves
 * the whole path: plain, `--tail`, `--timestamps`, `--since`, `--limit-bytes`, `-p` after a restart
 * (and its error without one), and `-f` that ends by itself when the container exits. Each output
 * is compared line for line, and the runtime (crictl) is checked for the instances read. Then a
 * ServiceAccount token straight to the node server: 401 without it, 403 without RBAC on
 * nodes/proxy, 200 once a ClusterRole granting it is bound.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { NODE_IP, NODE_NAME, apply, busyboxPod, createNamespace, crictl, deleteNamespace, eventually, getPod, kubectl, requireCluster, uniqueName, waitForPhase } from './helpers.js';

const run = promisify(execFile);
const CLUSTER_DIR = process.env.CLUSTER_DIR ?? '';
// The harness gives the agent a serving certificate signed by the cluster CA (test/cluster/lib/agent.sh).
const SERVER_CA = path.join(CLUSTER_DIR, 'pki', 'ca.crt');

/** kubectl's stdout, stderr and exit code (a failing kubectl does not throw). */
async function kubectlResult(args: readonly string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await run('kubectl', [...args], { timeout: 120_000 });
    return { stdout, stderr, code: 0 };
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; code?: number };
    return { stdout: e.stdout ?? '', stderr: e.stderr ?? '', code: typeof e.code === 'number' ? e.code : -1 };
  }
}

/** curl straight to the node server, trusting its self-signed certificate: status and body. */
async function curlNode(urlPath: string, token?: string): Promise<{ status: number; body: string }> {
  const args = ['-sS', '--cacert', SERVER_CA, '-w', '\n%{http_code}', ...(token === undefined ? [] : ['-H', `Authorization: Bearer ${token}`]), `https://${NODE_IP}:10250${urlPath}`];
  const { stdout } = await run('curl', args, { timeout: 30_000 });
  const cut = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) };
}

const lines = (text: string): string[] => text.split('\n').filter((l) => l !== '');
const range = (prefix: string, from: number, to: number): string[] => Array.from({ length: to - from + 1 }, (_, k) => `${prefix} ${from + k}`);

interface CrictlContainer {
  readonly id: string;
  readonly state: string;
  readonly metadata: { readonly name: string; readonly attempt: number };
}

async function runtimeInstances(uid: string): Promise<CrictlContainer[]> {
  const out = JSON.parse(await crictl(['ps', '-a', '--label', `io.kubernetes.pod.uid=${uid}`, '-o', 'json'])) as { containers: CrictlContainer[] };
  return out.containers.sort((a, b) => a.metadata.attempt - b.metadata.attempt);
}

function mainStatus(pod: V1Pod | undefined): { restartCount?: number; state?: { running?: object } } | undefined {
  return pod?.status?.containerStatuses?.find((c) => c.name === 'main');
}

describe('the node server on the nodelet node', () => {
  let namespace = '';
  const restarted = 'twice';
  const clusterRole = uniqueName('e2e-node-proxy');

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-node-server');
    // First run: 10 lines on stdout, one on stderr, exit 1. Second run: 5 lines, then stays up.
    const script = [
      'if [ -f /data/ran ]; then for i in $(seq 1 5); do echo "run2 line $i"; done; exec sleep 3600; fi',
      'touch /data/ran; for i in $(seq 1 10); do echo "run1 line $i"; done; echo "run1 err" >&2; exit 1',
    ].join('\n');
    const pod = busyboxPod({ name: restarted, namespace, script, nodeName: NODE_NAME }) as { spec: { containers: object[]; volumes?: object[] } };
    pod.spec.containers = [{ ...(pod.spec.containers[0] ?? {}), volumeMounts: [{ name: 'data', mountPath: '/data' }] }];
    pod.spec.volumes = [{ name: 'data', emptyDir: {} }];
    await apply(pod);
  });

  after(async () => {
    await kubectl(['delete', 'clusterrole,clusterrolebinding', clusterRole, '--ignore-not-found']).catch(() => undefined);
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it("advertises port 10250 in the Node's daemonEndpoints, with the InternalIP the server listens on", async () => {
    const node = JSON.parse(await kubectl(['get', 'node', NODE_NAME, '-o', 'json'])) as { status: { daemonEndpoints: { kubeletEndpoint: { Port: number } }; addresses: { type: string; address: string }[] } };
    assert.equal(node.status.daemonEndpoints.kubeletEndpoint.Port, 10250);
    assert.equal(node.status.addresses.find((a) => a.type === 'InternalIP')?.address, NODE_IP);
    // The certificate curl verifies names that address; no credentials: 401. (The agent was just
    // restarted: the Node may still be Ready from before while the server comes up.)
    const reply = await eventually('the node server to answer', () => curlNode('/healthz'), 30_000);
    assert.deepEqual(reply, { status: 401, body: 'Unauthorized' });
  });

  it('serves kubectl logs of a restarted container: plain, --tail, --timestamps, --since, --limit-bytes and -p, counted exactly', async () => {
    const pod = await eventually('the container to run again after its first exit', async () => {
      const p = await getPod(namespace, restarted);
      const s = mainStatus(p);
      return s?.restartCount === 1 && s.state?.running !== undefined ? p : undefined;
    }, 120_000);
    const uid = pod.metadata?.uid ?? '';
    const instances = await runtimeInstances(uid);
    assert.deepEqual(instances.map((c) => [c.metadata.name, c.metadata.attempt, c.state]), [['main', 0, 'CONTAINER_EXITED'], ['main', 1, 'CONTAINER_RUNNING']]);
    const logs = (...extra: string[]): Promise<string> => eventually('logs', async () => {
      const out = await kubectl(['logs', '-n', namespace, restarted, ...extra]);
      return out;
    });
    // The second run's five lines are written once it runs; wait until all are there.
    await eventually('five lines of the second run', async () => (lines(await logs()).length === 5 ? true : undefined));
    assert.deepEqual(lines(await logs()), range('run2 line', 1, 5));
    // stdout and stderr reach the log file through separate pipes: where the stderr line lands
    // among the others is the runtime's timing, so stdout's order is checked and stderr counted.
    const previous = lines(await logs('-p'));
    assert.deepEqual(previous.filter((l) => l !== 'run1 err'), range('run1 line', 1, 10));
    assert.equal(previous.filter((l) => l === 'run1 err').length, 1);
    assert.deepEqual(lines(await logs('--tail=2')), range('run2 line', 4, 5));
    assert.deepEqual(lines(await logs('-p', '--tail=3')), previous.slice(-3));
    const stamped = lines(await logs('--timestamps'));
    assert.equal(stamped.length, 5);
    for (const [i, l] of stamped.entries()) assert.match(l, new RegExp(`^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{9}Z run2 line ${i + 1}$`));
    assert.equal(await logs('--limit-bytes=13'), 'run2 line 1\nr');
    assert.deepEqual(lines(await logs('--since=1h')), range('run2 line', 1, 5));
    // Nothing was written in the last seconds (the container sleeps).
    await sleep(3000);
    assert.deepEqual(lines(await logs('--since=2s')), []);
    const firstStamp = stamped[0]?.split(' ')[0] ?? '';
    assert.deepEqual(lines(await logs(`--since-time=${firstStamp}`)), range('run2 line', 1, 5));
  });

  it("answers -p without a previous instance with the kubelet's error, and unknown containers with 404", async () => {
    const name = uniqueName('once');
    await apply(busyboxPod({ name, namespace, script: 'echo only; exec sleep 3600', nodeName: NODE_NAME }));
    await waitForPhase(namespace, name, 'Running');
    const previous = await kubectlResult(['logs', '-n', namespace, name, '-p']);
    assert.notEqual(previous.code, 0);
    assert.match(previous.stderr, /previous terminated container "main" in pod "once-[a-z0-9]+" not found/);
    // The API server refuses an unknown container itself; through its node proxy the node server answers.
    const unknown = await kubectlResult(['get', '--raw', `/api/v1/nodes/${NODE_NAME}/proxy/containerLogs/${namespace}/${name}/nope`]);
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /NotFound|not found/i);
    const proxied = await kubectl(['get', '--raw', `/api/v1/nodes/${NODE_NAME}/proxy/containerLogs/${namespace}/${name}/main`]);
    assert.equal(proxied, 'only\n');
  });

  it('ends kubectl logs -f by itself when the container exits, with every line', async () => {
    const name = uniqueName('follow');
    const script = 'for i in 1 2 3; do echo "early $i"; done; sleep 4; for i in 1 2 3; do echo "late $i"; done; exit 0';
    const pod = busyboxPod({ name, namespace, script, nodeName: NODE_NAME, restartPolicy: 'Never' });
    await apply(pod);
    await waitForPhase(namespace, name, 'Running');
    const started = Date.now();
    const child = spawn('kubectl', ['logs', '-f', '-n', namespace, name], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const code = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => {
        child.kill();
      }, 60_000);
      child.on('close', (c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
    const endedAfterMs = Date.now() - started;
    assert.equal(code, 0, `kubectl logs -f did not end by itself (stderr: ${err})`);
    assert.deepEqual(lines(out), [...range('early', 1, 3), ...range('late', 1, 3)]);
    const done = await waitForPhase(namespace, name, 'Succeeded');
    const finishedAt = done.status?.containerStatuses?.[0]?.state?.terminated?.finishedAt;
    const instances = await runtimeInstances(done.metadata?.uid ?? '');
    assert.deepEqual(instances.map((c) => c.state), ['CONTAINER_EXITED']);
    console.log(`kubectl logs -f ended ${endedAfterMs} ms after it started; the container finished at ${String(finishedAt ?? '?')}, the follow ended at ${new Date(started + endedAfterMs).toISOString()}`);
  });

  it('answers a ServiceAccount token 403 without nodes/proxy, and 200 once a ClusterRole granting it is bound', async () => {
    await kubectl(['create', 'serviceaccount', 'reader', '-n', namespace]);
    const token = (await kubectl(['create', 'token', 'reader', '-n', namespace, '--duration=10m'])).trim();
    const urlPath = `/containerLogs/${namespace}/${restarted}/main?tailLines=1`;
    assert.deepEqual(await curlNode(urlPath, token), {
      status: 403,
      body: `Forbidden (user=system:serviceaccount:${namespace}:reader, verb=get, resource=nodes, subresource=[proxy])`,
    });
    assert.equal((await curlNode(urlPath, 'not-a-token')).status, 401);
    await kubectl(['create', 'clusterrole', clusterRole, '--verb=get', '--resource=nodes/proxy']);
    await kubectl(['create', 'clusterrolebinding', clusterRole, `--clusterrole=${clusterRole}`, `--serviceaccount=${namespace}:reader`]);
    const granted = Date.now();
    // The node server keeps a denial for 30 s (the kubelet's default): poll until it asks again.
    const reply = await eventually('a 200 once the role is bound', async () => {
      const r = await curlNode(urlPath, token);
      return r.status === 200 ? r : undefined;
    }, 90_000);
    assert.equal(reply.body, 'run2 line 5\n');
    console.log(`node server: 200 for the ServiceAccount ${Date.now() - granted} ms after the binding (denials are cached 30 s)`);
  });

  it("serves /configz: the node's settings as a KubeletConfiguration, agreeing with the Node it registered", async () => {
    const { kubeletconfig: config } = JSON.parse(await kubectl(['get', '--raw', `/api/v1/nodes/${NODE_NAME}/proxy/configz`])) as { kubeletconfig: Record<string, unknown> };
    const node = JSON.parse(await kubectl(['get', 'node', NODE_NAME, '-o', 'json'])) as { status: { capacity: Record<string, string>; daemonEndpoints: { kubeletEndpoint: { Port: number } } } };
    assert.equal(config.kind, 'KubeletConfiguration');
    assert.equal(config.apiVersion, 'kubelet.config.k8s.io/v1beta1');
    assert.equal(String(config.maxPods), node.status.capacity.pods);
    assert.equal(config.port, node.status.daemonEndpoints.kubeletEndpoint.Port);
    // The node server's review cache, as long as the kubelet's defaults.
    assert.deepEqual(config.authorization, { mode: 'Webhook', webhook: { cacheAuthorizedTTL: '5m0s', cacheUnauthorizedTTL: '30s' } });
    assert.match(String(config.imageMinimumGCAge), /^(\d+h)?(\d+m)?\d+s$/, 'a Go duration');
  });
});

