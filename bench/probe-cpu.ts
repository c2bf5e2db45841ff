/**
 * The probe-CPU benchmark (`npm run bench:probes`; not a test: it asserts nothing about speed).
 * What hundreds of probes cost the agent: N pods (default 110, the node's maxPods) each with an
 * httpGet readiness probe and a tcpSocket liveness probe every second (busybox httpd answering
 * both), against the same N pods without probes. Per round, each variant: create the pods, wait
 * until all are Running and Ready, settle, then take the agent's CPU seconds (`/proc/<pid>/stat`)
 * over a fixed window and its peak RSS; delete them and wait until they are gone. Variants are
 * interleaved over at least three rounds; results go to docs/benchmarks.md.
 *
 *   node --import tsx bench/probe-cpu.ts [--pods 110] [--rounds 3] [--window-s 60] [--doc PATH | --no-doc]
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { createCriClient } from '../cri/grpc-client.js';
import { RssSampler, agentPid, cpuSeconds } from './agent-process.js';
import { describeMachine } from './machine.js';
import { PROBE_BEGIN_MARKER, PROBE_END_MARKER, renderProbeResults, type ProbeSample } from './probe-cpu-report.js';
import { writeResultsBlock } from './report.js';
import { BENCH_IMAGE } from './agent-startup.js';
import { inPool } from './stats.js';

const REPO_DIR = path.resolve(import.meta.dirname, '..');
const PERIOD_SECONDS = 1;
const SETTLE_MS = 15_000;
const PORT = 8080;

interface Settings {
  readonly pods: number;
  readonly rounds: number;
  readonly windowSeconds: number;
  readonly doc: string | undefined;
}

function positive(text: string, flag: string): number {
  const n = Number.parseInt(text, 10);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${flag} wants a positive integer, got ${text}`);
  return n;
}

function parseSettings(argv: string[]): Settings {
  const { values } = parseArgs({
    args: argv,
    options: {
      pods: { type: 'string', default: '110' },
      rounds: { type: 'string', default: '3' },
      'window-s': { type: 'string', default: '60' },
      doc: { type: 'string', default: path.join(REPO_DIR, 'docs', 'benchmarks.md') },
      'no-doc': { type: 'boolean', default: false },
    },
  });
  return { pods: positive(values.pods, '--pods'), rounds: positive(values.rounds, '--rounds'), windowSeconds: positive(values['window-s'], '--window-s'), doc: values['no-doc'] ? undefined : values.doc };
}

function log(line: string): void {
  process.stderr.write(`[bench:probes ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function requireEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set: source .cluster/env (npm run bench:probes does)`);
  return value;
}

/** A busybox httpd pod; with probes, readiness asks it over HTTP and liveness opens a TCP connection. */
function benchPod(namespace: string, name: string, nodeName: string, probes: boolean): V1Pod {
  const every = { periodSeconds: PERIOD_SECONDS, timeoutSeconds: 1, failureThreshold: 3 };
  return {
    metadata: { name, namespace },
    spec: {
      nodeName,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 1,
      containers: [{
        name: 'web',
        image: BENCH_IMAGE,
        imagePullPolicy: 'IfNotPresent',
        command: ['sh', '-c', `mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p ${PORT} -h /www`],
        ...(probes ? { readinessProbe: { httpGet: { path: '/', port: PORT }, ...every }, livenessProbe: { tcpSocket: { port: PORT }, ...every } } : {}),
      }],
    },
  };
}

const isReady = (p: V1Pod): boolean => p.status?.phase === 'Running' && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

async function readyCount(core: CoreV1Api, namespace: string): Promise<number> {
  return (await core.listNamespacedPod({ namespace })).items.filter(isReady).length;
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await pause(2000);
  }
}

async function namespaceGone(core: CoreV1Api, namespace: string): Promise<boolean> {
  try {
    await core.readNamespace({ name: namespace });
    return false;
  } catch {
    return true;
  }
}

interface RunContext {
  readonly core: CoreV1Api;
  readonly nodeName: string;
  readonly pid: number;
  readonly settings: Settings;
}

async function measureVariant(ctx: RunContext, variant: ProbeSample['variant'], round: number): Promise<ProbeSample> {
  const { core, settings } = ctx;
  const namespace = `bench-probes-${round}-${variant === 'probes' ? 'on' : 'off'}-${Date.now().toString(36)}`;
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  const names = Array.from({ length: settings.pods }, (_, i) => `web-${i}`);
  await inPool(names, 10, async (name) => {
    await core.createNamespacedPod({ namespace, body: benchPod(namespace, name, ctx.nodeName, variant === 'probes') });
  });
  await waitFor(`${settings.pods} pods Ready (${variant}, round ${round})`, async () => (await readyCount(core, namespace)) === settings.pods, 600_000);
  await pause(SETTLE_MS);
  const readyAtStart = await readyCount(core, namespace);
  const sampler = new RssSampler(ctx.pid);
  sampler.start();
  const before = await cpuSeconds(ctx.pid);
  await pause(settings.windowSeconds * 1000);
  const used = (await cpuSeconds(ctx.pid)) - before;
  const peakRssBytes = sampler.stop();
  const readyAtEnd = await readyCount(core, namespace);
  log(`round ${round}, ${variant}: ${used.toFixed(2)} CPU s over ${settings.windowSeconds} s; Ready ${readyAtStart} → ${readyAtEnd}`);
  await core.deleteNamespace({ name: namespace });
  await waitFor(`namespace ${namespace} gone`, () => namespaceGone(core, namespace), 600_000);
  return { variant, round, cpuSeconds: used, windowSeconds: settings.windowSeconds, peakRssBytes, readyAtStart, readyAtEnd };
}

async function main(): Promise<void> {
  const settings = parseSettings(process.argv.slice(2));
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(requireEnv('KUBECONFIG'));
  const clusterDir = process.env.CLUSTER_DIR ?? path.join(REPO_DIR, '.cluster');
  const cri = createCriClient({ endpoint: requireEnv('CONTAINER_RUNTIME_ENDPOINT'), defaultTimeoutMs: 120_000 });
  try {
    const ctx: RunContext = { core: kubeConfig.makeApiClient(CoreV1Api), nodeName: requireEnv('NODE_NAME'), pid: await agentPid(clusterDir), settings };
    const machine = await describeMachine({ runtime: cri.runtime, kubeConfig, repoDir: REPO_DIR });
    const samples: ProbeSample[] = [];
    for (let round = 1; round <= settings.rounds; round += 1) {
      // Alternate which variant goes first, so neither always follows the other's teardown.
      const order: ProbeSample['variant'][] = round % 2 === 1 ? ['no probes', 'probes'] : ['probes', 'no probes'];
      for (const variant of order) samples.push(await measureVariant(ctx, variant, round));
    }
    if ((await agentPid(clusterDir)) !== ctx.pid) throw new Error('the agent restarted during the run: its CPU numbers are meaningless');
    const block = renderProbeResults({ machine, pods: settings.pods, periodSeconds: PERIOD_SECONDS, samples });
    process.stdout.write(`${block}\n`);
    if (settings.doc !== undefined) {
      await writeResultsBlock(settings.doc, block, { begin: PROBE_BEGIN_MARKER, end: PROBE_END_MARKER });
      log(`results written to ${path.relative(process.cwd(), settings.doc)}`);
    }
  } finally {
    cri.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:probes failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
