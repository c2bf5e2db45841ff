/**
 * The pod-startup benchmark (`npm run bench`; not a test: it asserts nothing about timing): the same
 * workloads through nodelet's node, the kubelet's node (test/cluster/kubelet-up.sh; bench/run.sh
 * brings it up and down) and raw CRI, alternating, for several rounds; writes min / median / max
 * per path and the per-round ratios nodelet ÷ kubelet and nodelet ÷ raw CRI into docs/benchmarks.md
 * (see DEFAULT_INTRO in report.ts and the prose there for what is measured).
 *
 *   node --import tsx bench/pod-startup.ts [--sizes 30,110,250] [--rounds 3] [--steady-s 300]
 *     [--steady-life-s 30] [--idle-s 30] [--idle-pods 110] [--fresh-pods 20] [--raw-concurrency N]
 *     [--timeout-s 600] [--no-kubelet] [--doc PATH | --no-doc]
 *
 * Needs the test cluster's environment (`source .cluster/env`) and, for the kubelet, the kubelet
 * node's (`source .cluster/kubelet/env`); bench/run.sh does both.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { agentConcurrency } from './agent-process.js';
import { checkAgentsStillRunning, connectNodes, nodeInfo, requireEnv } from './agent-node.js';
import { renderComparison, type ComparisonReport } from './compare-report.js';
import { describeMachine } from './machine.js';
import { removeRawLeftovers } from './raw-cri-startup.js';
import { writeResultsBlock } from './report.js';
import { runRounds, type RunSettings } from './side-by-side.js';
import { positiveInts } from './args.js';

const REPO_DIR = path.resolve(import.meta.dirname, '..');

interface Settings extends RunSettings {
  readonly withKubelet: boolean;
  readonly rawConcurrencyFlag: number | undefined;
  readonly doc: string | undefined;
  readonly options: string;
}

const one = (text: string, flag: string): number => positiveInts(text, flag)[0] ?? 1;

function parseSettings(argv: string[]): Settings {
  const { values } = parseArgs({
    args: argv,
    options: {
      sizes: { type: 'string', default: '30,110,250' },
      rounds: { type: 'string', default: '3' },
      'steady-s': { type: 'string', default: '300' },
      'steady-life-s': { type: 'string', default: '30' },
      'idle-s': { type: 'string', default: '30' },
      'idle-pods': { type: 'string', default: '110' },
      'fresh-pods': { type: 'string', default: '20' },
      'raw-concurrency': { type: 'string' },
      'timeout-s': { type: 'string', default: '600' },
      'no-kubelet': { type: 'boolean', default: false },
      doc: { type: 'string', default: path.join(REPO_DIR, 'docs', 'benchmarks.md') },
      'no-doc': { type: 'boolean', default: false },
    },
  });
  return {
    sizes: positiveInts(values.sizes, '--sizes'),
    rounds: one(values.rounds, '--rounds'),
    steadyMs: one(values['steady-s'], '--steady-s') * 1000,
    steadyLifeMs: one(values['steady-life-s'], '--steady-life-s') * 1000,
    idleMs: one(values['idle-s'], '--idle-s') * 1000,
    idlePods: one(values['idle-pods'], '--idle-pods'),
    freshPods: one(values['fresh-pods'], '--fresh-pods'),
    rawConcurrency: 0,
    rawConcurrencyFlag: values['raw-concurrency'] === undefined ? undefined : one(values['raw-concurrency'], '--raw-concurrency'),
    timeoutMs: one(values['timeout-s'], '--timeout-s') * 1000,
    withKubelet: !values['no-kubelet'],
    doc: values['no-doc'] ? undefined : values.doc,
    options: argv.filter((a) => a !== '--no-doc').join(' ') || '(the defaults)',
  };
}

function log(line: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}

async function main(): Promise<void> {
  const parsed = parseSettings(process.argv.slice(2));
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(requireEnv('KUBECONFIG'));
  const { nodes, clients, nodeletRuntime } = await connectNodes({ clusterDir: process.env.CLUSTER_DIR ?? path.join(REPO_DIR, '.cluster'), withKubelet: parsed.withKubelet });
  try {
    const workers = await agentConcurrency(nodes[0]?.pid ?? 0);
    const settings: Settings = { ...parsed, rawConcurrency: parsed.rawConcurrencyFlag ?? workers };
    const leftovers = await removeRawLeftovers(nodeletRuntime.runtime);
    if (leftovers > 0) log(`removed ${leftovers} sandboxes an earlier run left behind`);
    const machine = await describeMachine({ runtime: nodeletRuntime.runtime, kubeConfig, repoDir: REPO_DIR });
    const kubeletNode = nodes.find((n) => n.target === 'kubelet');
    const kubelet = kubeletNode === undefined ? undefined : await nodeInfo(kubeConfig, kubeletNode.nodeName);
    const { samples, notes } = await runRounds({ kubeConfig, nodes, raw: { runtime: nodeletRuntime.runtime, images: nodeletRuntime.image }, settings, log });
    await checkAgentsStillRunning(nodes);
    if (kubeletNode === undefined) notes.push('No kubelet node in this run (--no-kubelet): the nodelet ÷ kubelet ratios are n/a.');
    const report: ComparisonReport = {
      machine,
      kubelet,
      settings: { ...settings, agentConcurrency: workers, idleSeconds: settings.idleMs / 1000, steadySeconds: settings.steadyMs / 1000, steadyLifeSeconds: settings.steadyLifeMs / 1000 },
      samples,
      notes,
    };
    const block = renderComparison(report);
    process.stdout.write(`${block}\n`);
    if (settings.doc !== undefined) {
      await writeResultsBlock(settings.doc, block);
      log(`results written to ${path.relative(process.cwd(), settings.doc)}`);
    }
  } finally {
    for (const client of clients) client.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
