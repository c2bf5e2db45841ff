/**
 * What each agent asks of its runtime while a batch of pods starts (`npm run bench:cri-calls`; not
 * a test: it asserts nothing). The same batch as the pod-startup benchmark (bench/agent-startup.ts:
 * N pods created at once, Running, deleted) through nodelet's node and the kubelet's, alternating;
 * each agent's CRI call counter (`kubelet_runtime_operations_total`, read through the API server's
 * node proxy) is read before the first create and once the last pod is Running. The CPU split
 * (`npm run bench:cpu`) says how much of each pod's CPU is the runtime's; this says how many calls
 * each agent makes for it.
 *
 *   npm run bench:cri-calls -- [--sizes 30,110] [--rounds 3] [--doc PATH | --no-doc]
 *
 * Needs the test cluster (`npm run cluster:up`); bench/run.sh brings the kubelet node up and down.
 */
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { checkAgentsStillRunning, connectNodes, requireEnv, type AgentNode } from './agent-node.js';
import { benchAgentBatch, pause, waitForIdleNodes, type CreateWindow } from './agent-startup.js';
import { parseBatchBenchSettings } from './args.js';
import { roundOrder } from './compare.js';
import { CRI_CALLS_BEGIN_MARKER, CRI_CALLS_END_MARKER, callsBetween, criCallCounts, renderCriCalls, type CriCallCounts, type CriCallsSample } from './cri-calls-report.js';
import { describeMachine } from './machine.js';
import { writeResultsBlock } from './report.js';

const REPO_DIR = path.resolve(import.meta.dirname, '..');
/** Pause between two batches, so one's tail (its runtime's cleanup) is not the next one's load. */
const BETWEEN_MS = 10_000;
const TIMEOUT_MS = 600_000;

function log(line: string): void {
  process.stderr.write(`[bench:cri-calls ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}

/** Reads the node's agent's CRI call counter at the create window's ends. */
class CounterWindow implements CreateWindow {
  private before: CriCallCounts | undefined;
  private after: CriCallCounts | undefined;
  private openedAt = 0;
  private closedAt = 0;

  constructor(
    private readonly core: CoreV1Api,
    private readonly nodeName: string,
  ) {}

  private async read(): Promise<CriCallCounts> {
    return criCallCounts(await this.core.connectGetNodeProxyWithPath({ name: this.nodeName, path: 'metrics' }));
  }

  async opened(): Promise<void> {
    this.before = await this.read();
    this.openedAt = performance.now();
  }

  async closed(): Promise<void> {
    this.closedAt = performance.now();
    this.after = await this.read();
  }

  result(batch: Pick<CriCallsSample, 'target' | 'round' | 'pods'>): CriCallsSample {
    if (this.before === undefined || this.after === undefined) throw new Error(`${batch.target}: the counters were not read`);
    return { ...batch, windowSeconds: (this.closedAt - this.openedAt) / 1000, calls: callsBetween(this.before, this.after) };
  }
}

async function measure(kubeConfig: KubeConfig, node: AgentNode, pods: number, round: number): Promise<CriCallsSample> {
  const window = new CounterWindow(kubeConfig.makeApiClient(CoreV1Api), node.nodeName);
  const result = await benchAgentBatch({ kubeConfig, node, count: pods, timeoutMs: TIMEOUT_MS, createWindow: window, log });
  if (result.rejected > 0) throw new Error(`${node.target}: ${result.rejected} of ${pods} pods rejected; the counts would not be per started pod`);
  return window.result({ target: node.target, round, pods });
}

async function main(): Promise<void> {
  const settings = parseBatchBenchSettings(process.argv.slice(2), 'bench:cri-calls', path.join(REPO_DIR, 'docs', 'benchmarks.md'));
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(requireEnv('KUBECONFIG'));
  const { nodes, clients, nodeletRuntime } = await connectNodes({ clusterDir: process.env.CLUSTER_DIR ?? path.join(REPO_DIR, '.cluster'), withKubelet: true });
  try {
    const machine = await describeMachine({ runtime: nodeletRuntime.runtime, kubeConfig, repoDir: REPO_DIR });
    const samples: CriCallsSample[] = [];
    for (let round = 1; round <= settings.rounds; round += 1) {
      for (const pods of settings.sizes) {
        for (const node of roundOrder(nodes, round - 1)) {
          await waitForIdleNodes(kubeConfig, nodes);
          log(`round ${round} of ${settings.rounds}: ${node.target}, ${pods} pods`);
          samples.push(await measure(kubeConfig, node, pods, round));
          await pause(BETWEEN_MS);
        }
      }
    }
    await checkAgentsStillRunning(nodes);
    const block = renderCriCalls({ machine, command: settings.command, samples });
    process.stdout.write(`${block}\n`);
    if (settings.doc !== undefined) {
      await writeResultsBlock(settings.doc, block, { begin: CRI_CALLS_BEGIN_MARKER, end: CRI_CALLS_END_MARKER });
      log(`results written to ${path.relative(process.cwd(), settings.doc)}`);
    }
  } finally {
    for (const client of clients) client.close();
  }
}

main().catch((error: unknown) => {
  log(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exitCode = 1;
});
