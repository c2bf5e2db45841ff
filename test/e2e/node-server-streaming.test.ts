/**
 * End to end: `kubectl exec`, `attach` and `port-forward` as users meet them. kubectl speaks
 * WebSocket to the API server, which speaks SPDY to the node server on the node's InternalIP,
 * which proxies the connection to containerd's streaming server (127.0.0.1, random port): every
 * command below crosses the whole path. Checked: exec's output (stdout and stderr apart), its exit
 * code reaching kubectl, stdin piped through `-i`, a file an exec made seen by the runtime itself
 * (crictl exec); attach to a container reading stdin (stdinOnce: the container ends when the client
 * closes stdin); port-forward to busybox httpd on the pod network, fetched through 127.0.0.1; and
 * straight to the node server: `/run`, a plain exec request's 500, and a ServiceAccount token
 * without `nodes/proxy` create refused 403.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { get } from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { NODE_IP, NODE_NAME, apply, busyboxPod, createNamespace, crictl, deleteNamespace, kubectl, kubectlOutcome, requireCluster, waitForPhase } from './helpers.js';

const run = promisify(execFile);
const CLUSTER_DIR = process.env.CLUSTER_DIR ?? '';
// The harness gives the agent a serving certificate signed by the cluster CA (test/cluster/lib/agent.sh).
const SERVER_CA = path.join(CLUSTER_DIR, 'pki', 'ca.crt');
const PKI = path.join(CLUSTER_DIR, 'pki');

/** curl straight to the node server: as the API server (its kubelet client certificate) or with a token. */
async function curlNode(method: string, urlPath: string, auth: { token: string } | 'apiserver'): Promise<{ status: number; body: string }> {
  const credentials = auth === 'apiserver' ? ['--cert', path.join(PKI, 'apiserver-kubelet-client.crt'), '--key', path.join(PKI, 'apiserver-kubelet-client.key')] : ['-H', `Authorization: Bearer ${auth.token}`];
  const args = ['-sS', '-X', method, '--cacert', SERVER_CA, ...credentials, '-w', '\n%{http_code}', `https://${NODE_IP}:10250${urlPath}`];
  const { stdout } = await run('curl', args, { timeout: 30_000 });
  const cut = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) };
}

/** The running container's ID in the runtime (exactly one). */
async function runningContainer(uid: string): Promise<string> {
  const ids = (await crictl(['ps', '--state', 'Running', '--label', `io.kubernetes.pod.uid=${uid}`, '-q'])).split('\n').filter((l) => l !== '');
  assert.equal(ids.length, 1, `one running container for pod ${uid}: ${ids.join(', ')}`);
  return ids[0] ?? '';
}

/** Fetches `url` (loopback only) and resolves with its status and body. */
function fetchLocal(url: string): Promise<{ status: number; body: string }> {
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\//);
  return new Promise((resolve, reject) => {
    get(url, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body });
      });
      res.on('error', reject);
    }).on('error', reject);
  });
}

/** Resolves with the local port once kubectl port-forward prints `Forwarding from 127.0.0.1:<port>`. */
function forwardedPort(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      reject(new Error(`kubectl port-forward printed no local port: ${out}`));
    }, 60_000);
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      const port = /Forwarding from 127\.0\.0\.1:(\d+) ->/.exec(out)?.[1];
      if (port !== undefined) {
        clearTimeout(timer);
        resolve(Number(port));
      }
    });
    child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`kubectl port-forward exited (${String(code)}): ${out}`));
    });
  });
}

describe('kubectl exec, attach and port-forward through the nodelet node', () => {
  let namespace = '';
  const uids = new Map<string, string>();

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-streaming');
    await apply(busyboxPod({ name: 'shell', namespace, script: 'exec sleep 3600', nodeName: NODE_NAME }));
    await apply(busyboxPod({ name: 'web', namespace, script: 'mkdir -p /www && echo "hello from httpd" > /www/index.html && exec httpd -f -p 8080 -h /www', nodeName: NODE_NAME }));
    // Echoes each line it reads; stdinOnce: its stdin closes when the (first) attached client closes it.
    const reader = busyboxPod({ name: 'reader', namespace, script: 'while read line; do echo "got: $line"; done; echo "stdin closed"', nodeName: NODE_NAME, restartPolicy: 'Never' }) as { spec: { containers: Record<string, unknown>[] } };
    reader.spec.containers = [{ ...(reader.spec.containers[0] ?? {}), stdin: true, stdinOnce: true }];
    await apply(reader);
    for (const name of ['shell', 'web', 'reader']) {
      const pod = await waitForPhase(namespace, name, 'Running');
      uids.set(name, pod.metadata?.uid ?? '');
    }
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('kubectl exec: stdout and stderr apart, and a command that fails gives kubectl its exit code (3)', async () => {
    const started = Date.now();
    const hello = await kubectlOutcome(['exec', '-n', namespace, 'shell', '--', 'sh', '-c', 'echo out; echo err >&2']);
    console.log(`kubectl exec round trip: ${Date.now() - started} ms`);
    assert.deepEqual(hello, { stdout: 'out\n', stderr: 'err\n', code: 0 });
    const failing = await kubectlOutcome(['exec', '-n', namespace, 'shell', '--', 'sh', '-c', 'exit 3']);
    assert.equal(failing.code, 3, `kubectl's exit code; stderr ${failing.stderr}`);
    assert.equal(failing.stdout, '');
  });

  it('kubectl exec -i: stdin piped in reaches cat and comes back whole', async () => {
    const input = Array.from({ length: 200 }, (_, i) => `line ${i} ${randomBytes(8).toString('hex')}`).join('\n') + '\n';
    const echoed = await kubectlOutcome(['exec', '-i', '-n', namespace, 'shell', '--', 'cat'], input);
    assert.equal(echoed.code, 0, echoed.stderr);
    assert.equal(echoed.stdout, input);
  });

  it('a file kubectl exec creates is there for the runtime itself (crictl exec), and was not before', async () => {
    const file = `/tmp/made-by-exec-${randomBytes(4).toString('hex')}`;
    const id = await runningContainer(uids.get('shell') ?? '');
    await assert.rejects(crictl(['exec', id, 'test', '-e', file]), 'the file does not exist before the exec');
    const touched = await kubectlOutcome(['exec', '-n', namespace, 'shell', '--', 'touch', file]);
    assert.equal(touched.code, 0, touched.stderr);
    await crictl(['exec', id, 'test', '-e', file]);
  });

  it('kubectl attach -i: the container reads what is sent, and ends when stdin closes (stdinOnce)', async () => {
    const attached = await kubectlOutcome(['attach', '-i', '-n', namespace, 'reader', '-c', 'main'], 'hello\nworld\n');
    assert.equal(attached.code, 0, attached.stderr);
    // Lines the container wrote before the attach are not replayed; these came after.
    assert.deepEqual(attached.stdout.split('\n').filter((l) => l !== '' && !l.startsWith('If you don')), ['got: hello', 'got: world', 'stdin closed']);
    const pod = await waitForPhase(namespace, 'reader', 'Succeeded');
    assert.equal(pod.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 0);
    const states = JSON.parse(await crictl(['ps', '-a', '--label', `io.kubernetes.pod.uid=${uids.get('reader') ?? ''}`, '-o', 'json'])) as { containers: { state: string }[] };
    assert.deepEqual(states.containers.map((c) => c.state), ['CONTAINER_EXITED']);
  });

  it('kubectl port-forward: a request to 127.0.0.1:<local> reaches httpd on the pod network', async () => {
    const child = spawn('kubectl', ['port-forward', '--address', '127.0.0.1', '-n', namespace, 'pod/web', ':8080'], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const local = await forwardedPort(child);
      const started = Date.now();
      const first = await fetchLocal(`http://127.0.0.1:${local}/index.html`);
      console.log(`port-forward: first request ${Date.now() - started} ms`);
      assert.deepEqual(first, { status: 200, body: 'hello from httpd\n' });
      // A second connection over the same forward (a new stream pair on the same SPDY session).
      assert.equal((await fetchLocal(`http://127.0.0.1:${local}/index.html`)).body, 'hello from httpd\n');
      assert.equal((await fetchLocal(`http://127.0.0.1:${local}/missing`)).status, 404);
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('straight to the node server: /run answers the output, a plain exec request 500 Upgrade request required', async () => {
    const ran = await curlNode('POST', `/run/${namespace}/shell/main?cmd=echo%20from%20run`, 'apiserver');
    assert.deepEqual(ran, { status: 200, body: 'from run\n' });
    const plain = await curlNode('POST', `/exec/${namespace}/shell/main?command=true&output=1`, 'apiserver');
    assert.deepEqual(plain, { status: 500, body: 'Upgrade request required' });
    const unknown = await curlNode('POST', `/exec/${namespace}/nope/main?command=true&output=1`, 'apiserver');
    assert.deepEqual(unknown, { status: 404, body: 'pod does not exist' });
  });

  it('refuses a ServiceAccount token without nodes/proxy create: 403 from the node server', async () => {
    await kubectl(['create', 'serviceaccount', 'nobody', '-n', namespace]);
    const token = (await kubectl(['create', 'token', 'nobody', '-n', namespace, '--duration=10m'])).trim();
    const forbidden = `Forbidden (user=system:serviceaccount:${namespace}:nobody, verb=create, resource=nodes, subresource=[proxy])`;
    assert.deepEqual(await curlNode('POST', `/exec/${namespace}/shell/main?command=touch&command=/tmp/forbidden&output=1`, { token }), { status: 403, body: forbidden });
    assert.deepEqual(await curlNode('POST', `/run/${namespace}/shell/main?cmd=touch%20/tmp/forbidden`, { token }), { status: 403, body: forbidden });
    const id = await runningContainer(uids.get('shell') ?? '');
    await assert.rejects(crictl(['exec', id, 'test', '-e', '/tmp/forbidden']), 'nothing ran for the refused requests');
  });
});
