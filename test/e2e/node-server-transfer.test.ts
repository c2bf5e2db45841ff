/**
 * End to end, with the real kubectl through the API server to the nodelet node:
 * - `kubectl port-forward` carries 8 MiB of random bytes intact each way: a file served by httpd in
 *   the pod is downloaded, and 8 MiB are uploaded to a listener in the pod; sha256 compared with
 *   what `kubectl exec` and the runtime itself (`crictl exec`) compute inside the container.
 * - `kubectl logs -f` across log rotations (the NodeAgent's `spec.logRotation` 16Ki/2): a pod
 *   writing numbered lines; the follower's lines are consecutive, no gap and no duplicate, and
 *   include each observed rotation boundary (the rotated file's last line and the next one);
 *   `kubectl logs --tail` larger than the current file gives exactly the current file, as the
 *   kubelet (rotated files are not part of `kubectl logs`).
 * - `kubectl get --raw …/proxy/logs/`: the node's /var/log listed exactly, a pod's log file byte
 *   for byte, a link out of /var/log and escapes refused.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { get } from 'node:http';
import { connect } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { NODE_NAME, apply, busyboxPod, createNamespace, crictl, deleteNamespace, eventually, kubectl, requireCluster, waitForPhase } from './helpers.js';

const SIZE = 8 * 1024 * 1024;
const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');
const NODE_PROXY = `/api/v1/nodes/${NODE_NAME}/proxy`;

/** Local ports of `kubectl port-forward`, by remote port, once it printed one line per port. */
function forwardedPorts(child: ChildProcess, remotes: readonly number[]): Promise<Map<number, number>> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      reject(new Error(`kubectl port-forward printed no local ports: ${out}`));
    }, 60_000);
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      const found = new Map([...out.matchAll(/Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)/g)].map((m) => [Number(m[2]), Number(m[1])]));
      if (remotes.every((r) => found.has(r))) {
        clearTimeout(timer);
        resolve(found);
      }
    });
    child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`kubectl port-forward exited (${String(code)}): ${out}`));
    });
  });
}

/** GETs a loopback URL into memory. */
function download(url: string): Promise<{ status: number; body: Buffer }> {
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\//);
  return new Promise((resolve, reject) => {
    get(url, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) });
      });
      res.on('error', reject);
    }).on('error', reject);
  });
}

/** Sends `data` to 127.0.0.1:`port` and resolves with the first line the other side answers. */
function upload(port: number, data: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (c: Buffer) => {
      answer += c.toString();
      if (answer.includes('\n')) {
        socket.destroy();
        resolve(answer.split('\n')[0] ?? '');
      }
    });
    socket.on('error', reject);
    socket.on('close', () => {
      reject(new Error(`the upload's connection closed before an answer (got ${JSON.stringify(answer)})`));
    });
    socket.write(data);
  });
}

/** `sha256sum <file>` in the container, through kubectl exec and through the runtime. */
async function shaInside(namespace: string, pod: string, containerId: string, file: string): Promise<{ kubectl: string; crictl: string }> {
  const viaKubectl = (await kubectl(['exec', '-n', namespace, pod, '--', 'sha256sum', file])).split(' ')[0] ?? '';
  const viaCrictl = (await crictl(['exec', containerId, 'sha256sum', file])).split(' ')[0] ?? '';
  return { kubectl: viaKubectl, crictl: viaCrictl };
}

async function onlyContainer(uid: string): Promise<string> {
  const ids = (await crictl(['ps', '--state', 'Running', '--label', `io.kubernetes.pod.uid=${uid}`, '-q'])).split('\n').filter((l) => l !== '');
  assert.equal(ids.length, 1, `one running container for ${uid}`);
  return ids[0] ?? '';
}

const numbersOf = (text: string): number[] => text.split('\n').filter((l) => l !== '').map((l) => Number(l.split(' ')[0]));
const criNumbersOf = (content: string): number[] => numbersOf(content.slice(0, content.lastIndexOf('\n') + 1).split('\n').map((l) => l.split(' ').slice(3).join(' ')).join('\n'));
const consecutive = (numbers: readonly number[]): boolean => numbers.every((n, i) => i === 0 || n === (numbers[i - 1] ?? 0) + 1);

/** The names of a Go file-server listing. */
function listed(html: string): string[] {
  return [...html.matchAll(/<a href="[^"]*">([^<]*)<\/a>/g)].map((m) => (m[1] ?? '').replaceAll('&amp;', '&').replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&#34;', '"').replaceAll('&#39;', "'"));
}

describe('the node server carrying bulk data, logs across rotation, and /logs/', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-node-transfer');
  });

  after(async () => {
    await kubectl(['patch', 'nodeagent', NODE_NAME, '--type', 'merge', '-p', JSON.stringify({ spec: { logRotation: null } })]).catch(() => undefined);
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('kubectl port-forward carries 8 MiB intact both ways (sha256 against kubectl exec and crictl exec)', { timeout: 180_000 }, async () => {
    // httpd serves 8 MiB of random bytes; port 9000 stores exactly 8 MiB and answers their sha256 on the same connection.
    const script = [
      'mkdir -p /www && head -c 8388608 /dev/urandom > /www/big',
      'rm -f /tmp/f && mkfifo /tmp/f',
      '(nc -l -p 9000 <> /tmp/f | { head -c 8388608 > /tmp/up; sha256sum /tmp/up > /tmp/f; sleep 3600; }) &',
      'exec httpd -f -p 8080 -h /www',
    ].join('\n');
    await apply(busyboxPod({ name: 'bulk', namespace, script, nodeName: NODE_NAME }));
    const pod = await waitForPhase(namespace, 'bulk', 'Running');
    const id = await onlyContainer(pod.metadata?.uid ?? '');
    const child = spawn('kubectl', ['port-forward', '--address', '127.0.0.1', '-n', namespace, 'pod/bulk', ':8080', ':9000'], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const ports = await forwardedPorts(child, [8080, 9000]);
      const served = await eventually('/www/big written', async () => {
        const inside = await shaInside(namespace, 'bulk', id, '/www/big').catch(() => undefined);
        return inside !== undefined && inside.kubectl !== '' ? inside : undefined;
      });
      let started = performance.now();
      const down = await download(`http://127.0.0.1:${String(ports.get(8080))}/big`);
      const downMs = performance.now() - started;
      assert.equal(down.status, 200);
      assert.equal(down.body.length, SIZE, 'downloaded bytes');
      assert.equal(sha256(down.body), served.kubectl, 'the download matches the file in the container (kubectl exec)');
      assert.equal(served.crictl, served.kubectl, 'kubectl exec and crictl exec read the same file');

      const data = randomBytes(SIZE);
      started = performance.now();
      const answered = await upload(ports.get(9000) ?? 0, data);
      const upMs = performance.now() - started;
      assert.equal(answered.split(' ')[0], sha256(data), 'the listener in the pod received exactly the uploaded bytes');
      const stored = await shaInside(namespace, 'bulk', id, '/tmp/up');
      assert.deepEqual(stored, { kubectl: sha256(data), crictl: sha256(data) }, 'the stored upload, read through kubectl exec and crictl exec');
      const size = (await crictl(['exec', id, 'wc', '-c', '/tmp/up'])).trim().split(/\s+/)[0];
      assert.equal(Number(size), SIZE);
      console.log(`port-forward 8 MiB: download ${downMs.toFixed(0)} ms (${((SIZE / (downMs / 1000)) / 1048576).toFixed(1)} MiB/s), upload ${upMs.toFixed(0)} ms (${((SIZE / (upMs / 1000)) / 1048576).toFixed(1)} MiB/s)`);
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('kubectl logs -f reads through rotations with no gap or duplicate; --tail past the current file gives the current file', { timeout: 240_000 }, async () => {
    await kubectl(['patch', 'nodeagent', NODE_NAME, '--type', 'merge', '-p', JSON.stringify({ spec: { logRotation: { containerLogMaxSize: '16Ki', containerLogMaxFiles: 2 } } })]);
    // 50 numbered lines of ~90 bytes a second: over 16 KiB between two 10 s checks, so each check rotates.
    const script = 'n=0; while true; do seq $((n+1)) $((n+50)) | sed "s/$/ 0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789/"; n=$((n+50)); sleep 1; done';
    await apply(busyboxPod({ name: 'writer', namespace, script, nodeName: NODE_NAME }));
    const pod = await waitForPhase(namespace, 'writer', 'Running');
    const id = await onlyContainer(pod.metadata?.uid ?? '');
    const { logPath } = (JSON.parse(await crictl(['inspect', '-o', 'json', id])) as { status: { logPath: string } }).status;
    const dir = path.dirname(logPath);
    const base = path.basename(logPath);
    const follower = spawn('kubectl', ['logs', '-f', '--tail=5', '-n', namespace, 'writer'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let followed = '';
    follower.stdout.on('data', (c: Buffer) => (followed += c.toString()));
    // Each rotated file seen: the number of its last line (the boundary the follower must cross).
    const boundaries = new Map<string, number>();
    const startedMs = Date.now();
    try {
      while (boundaries.size < 2 && Date.now() - startedMs < 150_000) {
        for (const name of (await readdir(dir)).filter((n) => n.startsWith(`${base}.`) && !boundaries.has(n))) {
          const last = criNumbersOf(await readFile(path.join(dir, name), 'utf8').catch(() => '')).at(-1);
          if (last !== undefined) boundaries.set(name, last);
        }
        await sleep(1000);
      }
      // Let the follower catch up past the last boundary (it looks every 250 ms).
      await sleep(3000);
    } finally {
      follower.kill('SIGTERM');
    }
    const numbers = numbersOf(followed.slice(0, followed.lastIndexOf('\n') + 1));
    console.log(`logs -f across rotation: ${String(numbers.length)} lines ${String(numbers[0])}..${String(numbers.at(-1))}; rotation boundaries after lines ${[...boundaries.values()].join(', ')} (${String(boundaries.size)} rotations in ${((Date.now() - startedMs) / 1000).toFixed(0)} s)`);
    assert.ok(boundaries.size >= 2, 'at least two rotations seen');
    assert.ok(consecutive(numbers), 'the follower lost or repeated a line');
    for (const last of boundaries.values()) assert.ok(numbers.includes(last) && numbers.includes(last + 1), `the follower crossed the boundary after line ${String(last)}`);

    // --tail larger than the current file: the kubelet reads only the current file.
    const tail = await eventually('a --tail read with no rotation in between', async () => {
      const before = (await readdir(dir)).sort().join(' ');
      const first = criNumbersOf(await readFile(logPath, 'utf8'))[0];
      const got = numbersOf(await kubectl(['logs', '--tail=100000', '-n', namespace, 'writer']));
      const after = (await readdir(dir)).sort().join(' ');
      return before === after && first !== undefined ? { first, got } : undefined;
    });
    assert.equal(tail.got[0], tail.first, '--tail starts at the current file\'s first line, never in the rotated one');
    assert.ok(consecutive(tail.got));
    const three = numbersOf(await kubectl(['logs', '--tail=3', '-n', namespace, 'writer']));
    assert.equal(three.length, 3);
    assert.ok(consecutive(three));
    console.log(`logs --tail=100000 after rotation: ${String(tail.got.length)} lines ${String(tail.got[0])}..${String(tail.got.at(-1))} (the current file only)`);
  });

  it('kubectl get --raw …/proxy/logs/ lists /var/log exactly, serves a pod log byte for byte, and stays inside /var/log', { timeout: 120_000 }, async () => {
    const entries = await readdir('/var/log', { withFileTypes: true });
    const expected = entries.map((e) => (e.isDirectory() ? `${e.name}/` : e.name)).sort();
    assert.deepEqual(listed(await kubectl(['get', '--raw', `${NODE_PROXY}/logs/`])), expected);

    await apply(busyboxPod({ name: 'done', namespace, script: 'for i in $(seq 1 100); do echo "done line $i"; done', nodeName: NODE_NAME, restartPolicy: 'Never' }));
    const pod = await waitForPhase(namespace, 'done', 'Succeeded');
    const podDir = `${namespace}_done_${pod.metadata?.uid ?? ''}`;
    assert.ok(listed(await kubectl(['get', '--raw', `${NODE_PROXY}/logs/pods/`])).includes(`${podDir}/`), 'the pod log directory is listed');
    assert.deepEqual(listed(await kubectl(['get', '--raw', `${NODE_PROXY}/logs/pods/${podDir}/main/`])), ['0.log']);
    const onDisk = await readFile(`/var/log/pods/${podDir}/main/0.log`, 'utf8');
    assert.equal(await kubectl(['get', '--raw', `${NODE_PROXY}/logs/pods/${podDir}/main/0.log`]), onDisk);
    assert.equal(criNumbersOf(onDisk.replaceAll('done line ', '')).length, 100);

    // README (where the distribution has it) links out of /var/log: the kubelet's http.Dir would follow it; nodelet does not.
    const escapes = [`${NODE_PROXY}/logs/..%2F..%2Fetc%2Fpasswd`, `${NODE_PROXY}/logs/pods/..%2F..%2F..%2Fetc%2Fpasswd`, ...(expected.includes('README') ? [`${NODE_PROXY}/logs/README`] : [])];
    for (const url of escapes) {
      const out = await kubectl(['get', '--raw', url]).then((body) => `200 ${body}`, (error: unknown) => (error as { stderr?: string }).stderr ?? '');
      assert.match(out, /NotFound|not found/i, url);
      assert.doesNotMatch(out, /root:x:0:0/, url);
    }
  });
});
