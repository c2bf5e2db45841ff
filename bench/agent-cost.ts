/**
 * What a batch of pods costs the agent (`npm run bench:cost`; not a test: it asserts nothing).
 * Runs only the nodelet side of the pod-startup benchmark (bench/agent-startup.ts: N pods created
 * at once, Running, deleted, gone) for each size, `--rounds` times, and appends one JSON line per
 * batch to `--out` (labelled with `--label`, e.g. the commit). `--summary FILE` prints, per label
 * and size, min / median / max of the agent's CPU seconds, its peak RSS, the p50 create → Running
 * the throughput, and the reconcile runs and CRI calls per pod (from the agent's `/metrics` on the
 * node server, before the batch and 5 s after it) over the lines of FILE: interleave labels (A B A B A B, one agent build per
 * run) and summarize them together.
 *
 *   node --import tsx bench/agent-cost.ts [--sizes 30,110] [--rounds 1] [--label L] [--out FILE]
 *   node --import tsx bench/agent-cost.ts --summary FILE
 *
 * Needs the test cluster's environment (`source .cluster/env`).
 */
import { appendFile, readFile } from 'node:fs/promises';
import https, { type RequestOptions } from 'node:https';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { createCriClient } from '../cri/grpc-client.js';
import { agentPid, nodeServerOptions, rssBytes } from './agent-process.js';
import type { AgentNode } from './agent-node.js';
import { benchAgentBatch } from './agent-startup.js';
import { agentCounters, renderCostSummary, type AgentCounters, type CostSample } from './agent-cost-report.js';
import { positiveInts } from './args.js';

const REPO_DIR = path.resolve(import.meta.dirname, '..');

function log(line: string): void {
  process.stderr.write(`[bench:cost ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}

function requireEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set: source .cluster/env`);
  return value;
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The agent's counters, read from its node server's `/metrics` with the API server's client certificate. */
async function readAgentCounters(nodeServer: RequestOptions): Promise<AgentCounters> {
  const text = await new Promise<string>((resolve, reject) => {
    const req = https.get({ ...nodeServer, path: '/metrics', timeout: 30_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        if (res.statusCode === 200) resolve(Buffer.concat(chunks).toString('utf8'));
        else reject(new Error(`GET /metrics on the node server: HTTP ${String(res.statusCode)}`));
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('GET /metrics on the node server timed out')));
    req.on('error', reject);
  });
  return agentCounters(text);
}

interface RunSettings {
  readonly sizes: number[];
  readonly rounds: number;
  readonly label: string;
  readonly out: string | undefined;
}

async function runBatches(settings: RunSettings): Promise<void> {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(requireEnv('KUBECONFIG'));
  const nodeName = requireEnv('NODE_NAME');
  const clusterDir = process.env.CLUSTER_DIR ?? path.join(REPO_DIR, '.cluster');
  const cri = createCriClient({ endpoint: requireEnv('CONTAINER_RUNTIME_ENDPOINT'), defaultTimeoutMs: 120_000 });
  try {
    const pid = await agentPid(clusterDir);
    const nodeServer = await nodeServerOptions(clusterDir, requireEnv('NODE_IP'));
    for (let round = 1; round <= settings.rounds; round++) {
      for (const count of settings.sizes) {
        const node: AgentNode = { target: 'nodelet', nodeName, pid, runtime: cri.runtime, sandboxGoneWhen: 'removed' };
        const rssBeforeBytes = await rssBytes(pid);
        const countersBefore = await readAgentCounters(nodeServer);
        const r = await benchAgentBatch({ kubeConfig, node, count, timeoutMs: 600_000, log });
        // The pods' last reconciles (after their objects left the API) finish within this pause.
        await pause(5000);
        const countersAfter = await readAgentCounters(nodeServer);
        if ((await agentPid(clusterDir)) !== pid) throw new Error('the agent restarted during the run: its figures are meaningless');
        const sample: CostSample = {
          label: settings.label,
          count,
          round,
          cpuSeconds: r.cpuSecondsCreate + r.cpuSecondsDelete,
          cpuSecondsCreate: r.cpuSecondsCreate,
          peakRssMiB: r.peakRssBytes / 2 ** 20,
          rssBeforeMiB: rssBeforeBytes / 2 ** 20,
          createP50Ms: r.create.p50Ms,
          throughputPerSec: r.create.throughputPerSec,
          deleteAllGoneMs: r.deleteGoneMs,
          reconcilesPerPod: (countersAfter.reconciles - countersBefore.reconciles) / count,
          criCallsPerPod: (countersAfter.criCalls - countersBefore.criCalls) / count,
        };
        const line = JSON.stringify(sample);
        process.stdout.write(`${line}\n`);
        if (settings.out !== undefined) await appendFile(settings.out, `${line}\n`);
      }
    }
  } finally {
    cri.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      sizes: { type: 'string', default: '30,110' },
      rounds: { type: 'string', default: '1' },
      label: { type: 'string', default: 'agent' },
      out: { type: 'string' },
      summary: { type: 'string' },
    },
  });
  if (values.summary !== undefined) {
    const lines = (await readFile(values.summary, 'utf8')).split('\n').filter((l) => l.trim() !== '');
    process.stdout.write(renderCostSummary(lines.map((l) => JSON.parse(l) as CostSample)));
    return;
  }
  await runBatches({
    sizes: positiveInts(values.sizes, '--sizes'),
    rounds: positiveInts(values.rounds, '--rounds')[0] ?? 1,
    label: values.label,
    out: values.out,
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:cost failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
