/**
 * The pod-startup benchmark (`npm run bench`; not a test: it asserts nothing about timing).
 * For each N (default 30 and 100): N pods through nodelet, then the same N straight through the
 * CRI at the agent's concurrency and all at once; writes the results, with the machine and the
 * versions, into docs/benchmarks.md (see DEFAULT_INTRO in report.ts for what is measured).
 *
 *   node --import tsx bench/pod-startup.ts [--sizes 30,100] [--concurrency N] [--doc PATH | --no-doc] [--timeout-s 600]
 *
 * Needs the test cluster's environment (`source .cluster/env`; bench/run.sh does it).
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { createCriClient } from '../cri/grpc-client.js';
import { agentConcurrency, agentPid } from './agent-process.js';
import { describeMachine } from './machine.js';
import { benchNodelet } from './nodelet-startup.js';
import { benchRawCri, removeRawLeftovers } from './raw-cri-startup.js';
import { renderResults, updateDocument, type BenchReport, type SizeResult } from './report.js';

const REPO_DIR = path.resolve(import.meta.dirname, '..');

interface Settings {
  readonly sizes: number[];
  readonly concurrency: number | undefined;
  readonly doc: string | undefined;
  readonly timeoutMs: number;
}

function positiveInts(text: string, flag: string): number[] {
  const values = text.split(',').map((v) => Number.parseInt(v.trim(), 10));
  if (values.some((v) => !Number.isInteger(v) || v <= 0)) throw new Error(`${flag} wants positive integers, got ${text}`);
  return values;
}

function parseSettings(argv: string[]): Settings {
  const { values } = parseArgs({
    args: argv,
    options: {
      sizes: { type: 'string', default: '30,100' },
      concurrency: { type: 'string' },
      doc: { type: 'string', default: path.join(REPO_DIR, 'docs', 'benchmarks.md') },
      'no-doc': { type: 'boolean', default: false },
      'timeout-s': { type: 'string', default: '600' },
    },
  });
  return {
    sizes: positiveInts(values.sizes, '--sizes'),
    concurrency: values.concurrency === undefined ? undefined : positiveInts(values.concurrency, '--concurrency')[0],
    doc: values['no-doc'] ? undefined : values.doc,
    timeoutMs: (positiveInts(values['timeout-s'], '--timeout-s')[0] ?? 600) * 1000,
  };
}

function requireEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set: source .cluster/env (npm run bench does)`);
  return value;
}

function log(line: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Pods on the node outside the benchmark's namespaces: they compete for the same CPU. */
async function otherPodsOnNode(kubeConfig: KubeConfig, nodeName: string): Promise<number> {
  const pods = await kubeConfig.makeApiClient(CoreV1Api).listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${nodeName}` });
  return pods.items.filter((p) => !(p.metadata?.namespace ?? '').startsWith('bench-')).length;
}

async function main(): Promise<void> {
  const settings = parseSettings(process.argv.slice(2));
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(requireEnv('KUBECONFIG'));
  const nodeName = requireEnv('NODE_NAME');
  const clusterDir = process.env.CLUSTER_DIR ?? path.join(REPO_DIR, '.cluster');
  const cri = createCriClient({ endpoint: requireEnv('CONTAINER_RUNTIME_ENDPOINT'), defaultTimeoutMs: 120_000 });
  try {
    const pid = await agentPid(clusterDir);
    const agentWorkers = await agentConcurrency(pid);
    const concurrency = settings.concurrency ?? agentWorkers;
    const leftovers = await removeRawLeftovers(cri.runtime);
    if (leftovers > 0) log(`removed ${leftovers} sandboxes an earlier run left behind`);
    const machine = await describeMachine({ runtime: cri.runtime, kubeConfig, repoDir: REPO_DIR });
    const otherPods = await otherPodsOnNode(kubeConfig, nodeName);
    if (otherPods > 0) log(`warning: ${otherPods} other pods run on ${nodeName}; they share the CPU with the benchmark`);
    const sizes: SizeResult[] = [];
    for (const count of settings.sizes) {
      const nodelet = await benchNodelet({ kubeConfig, runtime: cri.runtime, nodeName, agentPid: pid, count, timeoutMs: settings.timeoutMs, log });
      await pause(5000);
      const rawBounded = await benchRawCri({ runtime: cri.runtime, images: cri.image, count, concurrency, log });
      await pause(3000);
      const rawUnbounded = await benchRawCri({ runtime: cri.runtime, images: cri.image, count, concurrency: undefined, log });
      await pause(3000);
      sizes.push({ count, nodelet, rawBounded, rawUnbounded });
    }
    if ((await agentPid(clusterDir)) !== pid) throw new Error('the agent restarted during the run: its CPU and memory numbers are meaningless');
    const report: BenchReport = { machine, agentConcurrency: agentWorkers, otherPods, sizes };
    const block = renderResults(report);
    process.stdout.write(`${block}\n`);
    if (settings.doc !== undefined) {
      const existing = await readFile(settings.doc, 'utf8').catch(() => undefined);
      await writeFile(settings.doc, updateDocument(existing, block));
      log(`results written to ${path.relative(process.cwd(), settings.doc)}`);
    }
  } finally {
    cri.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
