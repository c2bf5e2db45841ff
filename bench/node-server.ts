/**
 * The node server benchmark (`npm run bench:server`; not a test: it asserts nothing about speed).
 * - Log streaming: one container's whole log (~8 MiB, under the default 10Mi rotation size) read
 *   four ways: the file itself (`fs` read: the floor), `crictl logs` (the runtime's tool reading
 *   the same file), nodelet's `/containerLogs` straight to the node server (as the API server's
 *   client certificate), and `/api/v1/…/pods/<pod>/log` through the API server's proxy to it.
 * - Exec round trip: `crictl exec <id> true` (containerd's own streaming server) vs
 *   `kubectl exec <pod> -- true` (kubectl → API server → nodelet → containerd). Both are a Go
 *   binary starting; the difference is the path.
 * - Memory: the agent's VmRSS over a window while idle vs with 50 concurrent `follow` streams
 *   through the API server.
 * Variants are interleaved (the order rotates each round) over at least three rounds; results go
 * to docs/benchmarks.md between markers.
 *
 *   node --import tsx bench/node-server.ts [--rounds 3] [--exec-repeats 5] [--followers 50] [--doc PATH | --no-doc]
 */
import { execFile } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import { request, type RequestOptions } from 'node:https';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseArgs } from 'node:util';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { createCriClient } from '../cri/grpc-client.js';
import { agentPid, nodeServerOptions, rssBytes } from './agent-process.js';
import { describeMachine } from './machine.js';
import { BENCH_IMAGE } from './agent-startup.js';
import { SERVER_BEGIN_MARKER, SERVER_END_MARKER, renderServerResults, type ExecPath, type LogPath, type Sample } from './node-server-report.js';
import { writeResultsBlock } from './report.js';
import { percentile } from './stats.js';

const run = promisify(execFile);
const REPO_DIR = path.resolve(import.meta.dirname, '..');
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function log(line: string): void {
  process.stderr.write(`[bench:server ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}

function requireEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set: source .cluster/env (npm run bench:server does)`);
  return value;
}

interface Settings {
  readonly rounds: number;
  readonly execRepeats: number;
  readonly followers: number;
  readonly doc: string | undefined;
}

function parseSettings(argv: string[]): Settings {
  const { values } = parseArgs({
    args: argv,
    options: {
      rounds: { type: 'string', default: '3' },
      'exec-repeats': { type: 'string', default: '5' },
      followers: { type: 'string', default: '50' },
      doc: { type: 'string', default: path.join(REPO_DIR, 'docs', 'benchmarks.md') },
      'no-doc': { type: 'boolean', default: false },
    },
  });
  const n = (text: string, flag: string): number => {
    const v = Number.parseInt(text, 10);
    if (!Number.isInteger(v) || v <= 0) throw new Error(`${flag} wants a positive integer, got ${text}`);
    return v;
  };
  return { rounds: n(values.rounds, '--rounds'), execRepeats: n(values['exec-repeats'], '--exec-repeats'), followers: n(values.followers, '--followers'), doc: values['no-doc'] ? undefined : values.doc };
}

function pod(namespace: string, name: string, nodeName: string, script: string): V1Pod {
  return {
    metadata: { name, namespace },
    spec: { nodeName, automountServiceAccountToken: false, terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: BENCH_IMAGE, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', script] }] },
  };
}

/** Streams a GET's body, counting bytes; `untilBytes` ends it early (a follower's first data). */
function streamGet(options: RequestOptions, onFirst?: () => void): { done: Promise<number>; abort: () => void } {
  let abort = (): void => undefined;
  const done = new Promise<number>((resolve, reject) => {
    const req = request({ ...options, agent: false }, (res) => {
      let bytes = 0;
      if ((res.statusCode ?? 0) !== 200) reject(new Error(`GET ${String(options.path)}: ${String(res.statusCode)}`));
      res.on('data', (c: Buffer) => {
        if (bytes === 0) onFirst?.();
        bytes += c.length;
      });
      res.on('end', () => {
        resolve(bytes);
      });
      res.on('error', reject);
    });
    abort = () => {
      req.destroy();
    };
    req.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code !== 'ECONNRESET') reject(e);
    });
    req.end();
  });
  return { done, abort };
}

interface Context {
  readonly namespace: string;
  readonly logFile: string;
  readonly logBytes: number;
  readonly writerId: string;
  readonly shellId: string;
  readonly apiServer: RequestOptions;
  readonly nodeServer: RequestOptions;
  readonly pid: number;
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

async function readLogOnce(ctx: Context, variant: LogPath): Promise<number> {
  const ms = await timed(async () => {
    if (variant === 'file read') await readFile(ctx.logFile);
    else if (variant === 'crictl logs') await run('crictl', ['logs', ctx.writerId], { maxBuffer: 64 * 2 ** 20 });
    else if (variant === 'node server') await streamGet({ ...ctx.nodeServer, path: `/containerLogs/${ctx.namespace}/writer/main` }).done;
    else await streamGet({ ...ctx.apiServer, path: `/api/v1/namespaces/${ctx.namespace}/pods/writer/log` }).done;
  });
  return ctx.logBytes / 2 ** 20 / (ms / 1000);
}

async function execMedian(ctx: Context, variant: ExecPath, repeats: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < repeats; i += 1) {
    times.push(await timed(() => (variant === 'crictl exec' ? run('crictl', ['exec', ctx.shellId, 'true']) : run('kubectl', ['exec', '-n', ctx.namespace, 'shell', '--', 'true']))));
  }
  return percentile(times, 50);
}

/** Mean VmRSS (MiB) over `ms`, sampled every 100 ms. */
async function meanRss(pid: number, ms: number): Promise<number> {
  const samples: number[] = [];
  const end = Date.now() + ms;
  while (Date.now() < end) {
    samples.push(await rssBytes(pid));
    await pause(100);
  }
  return samples.reduce((a, b) => a + b, 0) / samples.length / 2 ** 20;
}

async function withFollowers(ctx: Context, n: number): Promise<number> {
  let first = 0;
  const streams = Array.from({ length: n }, () =>
    streamGet({ ...ctx.apiServer, path: `/api/v1/namespaces/${ctx.namespace}/pods/ticker/log?follow=true&tailLines=1` }, () => {
      first += 1;
    }),
  );
  const failures: string[] = [];
  for (const s of streams) {
    s.done.catch((error: unknown) => {
      failures.push(error instanceof Error ? error.message : String(error));
    });
  }
  const deadline = Date.now() + 60_000;
  while (first < n) {
    if (Date.now() > deadline || failures.length > 0) throw new Error(`only ${String(first)} of ${String(n)} followers got data; failures: ${[...new Set(failures)].join('; ')}`);
    await pause(100);
  }
  const rss = await meanRss(ctx.pid, 5000);
  for (const s of streams) s.abort();
  return rss;
}

const rotate = <T>(items: readonly T[], by: number): T[] => items.map((_, i) => items[(i + by) % items.length] as T);

async function measure(ctx: Context, settings: Settings): Promise<{ logs: Sample<LogPath>[]; exec: Sample<ExecPath>[]; rss: Sample<'idle' | 'followers'>[] }> {
  const logs: Sample<LogPath>[] = [];
  const exec: Sample<ExecPath>[] = [];
  const rss: Sample<'idle' | 'followers'>[] = [];
  for (let round = 1; round <= settings.rounds; round += 1) {
    for (const variant of rotate<LogPath>(['file read', 'crictl logs', 'node server', 'API server proxy'], round)) {
      logs.push({ variant, round, value: await readLogOnce(ctx, variant) });
    }
    for (const variant of rotate<ExecPath>(['crictl exec', 'kubectl exec'], round)) exec.push({ variant, round, value: await execMedian(ctx, variant, settings.execRepeats) });
    for (const variant of rotate<'idle' | 'followers'>(['idle', 'followers'], round)) {
      rss.push({ variant, round, value: variant === 'idle' ? await meanRss(ctx.pid, 5000) : await withFollowers(ctx, settings.followers) });
      // Let closed streams wind down before the next window.
      await pause(2000);
    }
    const line = (s: Sample<string>[]): string => s.filter((x) => x.round === round).map((x) => `${x.variant} ${x.value.toFixed(1)}`).join(', ');
    log(`round ${String(round)}: logs MiB/s ${line(logs)}; exec ms ${line(exec)}; RSS MiB ${line(rss)}`);
  }
  return { logs, exec, rss };
}

async function runningContainer(uid: string): Promise<{ id: string; logPath: string }> {
  const id = (await run('crictl', ['ps', '--state', 'Running', '--label', `io.kubernetes.pod.uid=${uid}`, '-q'])).stdout.trim();
  const inspected = JSON.parse((await run('crictl', ['inspect', '-o', 'json', id])).stdout) as { status: { logPath: string } };
  return { id, logPath: inspected.status.logPath };
}

async function setUp(core: CoreV1Api, nodeName: string, namespace: string): Promise<{ writer: { id: string; logPath: string }; shell: { id: string } }> {
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  // 60,000 lines of ~96 bytes (~8 MiB in the CRI format, under the default 10Mi rotation size), then idle: the log no longer changes.
  await core.createNamespacedPod({ namespace, body: pod(namespace, 'writer', nodeName, 'seq 1 60000 | sed "s/$/ $(printf "%090d" 0)/"; echo done-writing; exec sleep 3600') });
  // What the followers follow: a line a second, so each has its first bytes within a second.
  await core.createNamespacedPod({ namespace, body: pod(namespace, 'ticker', nodeName, 'while true; do date; sleep 1; done') });
  await core.createNamespacedPod({ namespace, body: pod(namespace, 'shell', nodeName, 'exec sleep 3600') });
  const deadline = Date.now() + 180_000;
  for (;;) {
    const pods = (await core.listNamespacedPod({ namespace })).items;
    if (pods.length === 3 && pods.every((p) => p.status?.phase === 'Running')) {
      const uid = (name: string): string => pods.find((p) => p.metadata?.name === name)?.metadata?.uid ?? '';
      const writer = await runningContainer(uid('writer'));
      const tail = (await run('crictl', ['logs', '--tail', '1', writer.id])).stdout;
      if (tail.includes('done-writing')) return { writer, shell: await runningContainer(uid('shell')) };
    }
    if (Date.now() > deadline) throw new Error('bench pods not ready in 180 s');
    await pause(1000);
  }
}

async function main(): Promise<void> {
  const settings = parseSettings(process.argv.slice(2));
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(requireEnv('KUBECONFIG'));
  const clusterDir = requireEnv('CLUSTER_DIR');
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const cri = createCriClient({ endpoint: requireEnv('CONTAINER_RUNTIME_ENDPOINT'), defaultTimeoutMs: 120_000 });
  const namespace = `bench-server-${Date.now().toString(36)}`;
  try {
    const { writer, shell } = await setUp(core, requireEnv('NODE_NAME'), namespace);
    const server = new URL(kubeConfig.getCurrentCluster()?.server ?? '');
    const apiServer: RequestOptions = { host: server.hostname, port: server.port };
    await kubeConfig.applyToHTTPSOptions(apiServer);
    const nodeServer = await nodeServerOptions(clusterDir, requireEnv('NODE_IP'));
    const before = await stat(writer.logPath);
    const logBytes = before.size;
    const ctx: Context = { namespace, logFile: writer.logPath, logBytes, writerId: writer.id, shellId: shell.id, apiServer, nodeServer, pid: await agentPid(clusterDir) };
    const machine = await describeMachine({ runtime: cri.runtime, kubeConfig, repoDir: REPO_DIR });
    const results = await measure(ctx, settings);
    if ((await agentPid(clusterDir)) !== ctx.pid) throw new Error('the agent restarted during the run');
    const after = await stat(writer.logPath);
    if (after.ino !== before.ino || after.size !== before.size) throw new Error('the measured log file changed during the run (rotated?): its figures are meaningless');
    const block = renderServerResults({ machine, logBytes, execRepeats: settings.execRepeats, followers: settings.followers, ...results });
    process.stdout.write(`${block}\n`);
    if (settings.doc !== undefined) {
      await writeResultsBlock(settings.doc, block, { begin: SERVER_BEGIN_MARKER, end: SERVER_END_MARKER });
      log(`results written to ${path.relative(process.cwd(), settings.doc)}`);
    }
  } finally {
    await core.deleteNamespace({ name: namespace }).catch(() => undefined);
    cri.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:server failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
