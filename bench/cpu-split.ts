/**
 * Where the machine's CPU goes while a batch of pods starts (`npm run bench:cpu`; not a test: it
 * asserts nothing). On this 2-core machine pod startup is bound by CPU: the throughput of each
 * path of the pod-startup benchmark is the machine's cores divided by the CPU each pod costs
 * everything that runs. So this takes a snapshot of every process's CPU time as the creates go
 * out and once the last pod is Running, for the same batch through nodelet, the kubelet and raw
 * CRI (bench/agent-startup.ts, bench/raw-cri-startup.ts), alternating, and splits the difference
 * by part: the agent, its queue, the control plane, the runtime with the containers, kernel
 * threads, the benchmark's own client.
 *
 *   npm run bench:cpu -- [--sizes 30,110] [--rounds 3] [--doc PATH | --no-doc]
 *
 * Needs the test cluster (`npm run cluster:up`); bench/run.sh brings the kubelet node up and down.
 */
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { KubeConfig } from '@kubernetes/client-node';
import type { CriClient } from '../cri/grpc-client.js';
import { agentConcurrency } from './agent-process.js';
import { checkAgentsStillRunning, connectNodes, requireEnv, type AgentNode } from './agent-node.js';
import { benchAgentBatch, pause, waitForIdleNodes, type CreateWindow } from './agent-startup.js';
import { roundOrder, type Target } from './compare.js';
import { CPU_SPLIT_BEGIN_MARKER, CPU_SPLIT_END_MARKER, renderCpuSplit, splitCpu, type CpuRoles, type CpuSplitSample } from './cpu-split-report.js';
import { takeCpuSnapshot, type CpuSnapshot } from './machine-cpu.js';
import { describeMachine } from './machine.js';
import { benchRawCri, removeRawLeftovers } from './raw-cri-startup.js';
import { writeResultsBlock } from './report.js';
import { parseBatchBenchSettings } from './args.js';

const REPO_DIR = path.resolve(import.meta.dirname, '..');
/** Pause between two batches, so one's tail (its runtime's cleanup) is not the next one's load. */
const BETWEEN_MS = 10_000;
const TIMEOUT_MS = 600_000;

function log(line: string): void {
  process.stderr.write(`[bench:cpu ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}

/** Snapshots at the create window's ends; `split` is what happened in between. */
class SnapshotWindow implements CreateWindow {
  private before: CpuSnapshot | undefined;
  private after: CpuSnapshot | undefined;
  private openedAt = 0;
  private closedAt = 0;

  async opened(): Promise<void> {
    this.before = await takeCpuSnapshot();
    this.openedAt = performance.now();
  }

  async closed(): Promise<void> {
    this.closedAt = performance.now();
    this.after = await takeCpuSnapshot();
  }

  result(batch: Pick<CpuSplitSample, 'target' | 'round' | 'pods' | 'running'>, roles: CpuRoles): CpuSplitSample {
    if (this.before === undefined || this.after === undefined) throw new Error(`${batch.target}: the create window was not taken`);
    return { ...batch, windowSeconds: (this.closedAt - this.openedAt) / 1000, split: splitCpu(this.before, this.after, roles) };
  }
}

interface Paths {
  readonly kubeConfig: KubeConfig;
  readonly nodes: readonly AgentNode[];
  readonly raw: CriClient;
  readonly rawConcurrency: number;
  /** Every CRI client opened, to close at the end. */
  readonly clients: readonly CriClient[];
}

async function measure(paths: Paths, target: Target, pods: number, round: number): Promise<CpuSplitSample> {
  const window = new SnapshotWindow();
  const node = paths.nodes.find((n) => n.target === target);
  if (node === undefined) {
    const result = await benchRawCri({ runtime: paths.raw.runtime, images: paths.raw.image, count: pods, concurrency: paths.rawConcurrency, createWindow: window, log });
    return window.result({ target, round, pods, running: result.create.count }, { agentPid: undefined, benchPid: process.pid, withQueue: false });
  }
  const result = await benchAgentBatch({ kubeConfig: paths.kubeConfig, node, count: pods, timeoutMs: TIMEOUT_MS, createWindow: window, log });
  return window.result({ target, round, pods, running: pods - result.rejected }, { agentPid: node.pid, benchPid: process.pid, withQueue: target === 'nodelet' });
}

async function connect(): Promise<Paths> {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(requireEnv('KUBECONFIG'));
  const { nodes, clients, nodeletRuntime } = await connectNodes({ clusterDir: process.env.CLUSTER_DIR ?? path.join(REPO_DIR, '.cluster'), withKubelet: true });
  return { kubeConfig, nodes, raw: nodeletRuntime, rawConcurrency: await agentConcurrency(nodes[0]?.pid ?? 0), clients };
}

async function main(): Promise<void> {
  const settings = parseBatchBenchSettings(process.argv.slice(2), 'bench:cpu', path.join(REPO_DIR, 'docs', 'benchmarks.md'));
  const paths = await connect();
  try {
    await removeRawLeftovers(paths.raw.runtime);
    const machine = await describeMachine({ runtime: paths.raw.runtime, kubeConfig: paths.kubeConfig, repoDir: REPO_DIR });
    const samples: CpuSplitSample[] = [];
    for (let round = 1; round <= settings.rounds; round += 1) {
      for (const pods of settings.sizes) {
        for (const target of roundOrder<Target>(['nodelet', 'kubelet', 'raw CRI'], round - 1)) {
          await waitForIdleNodes(paths.kubeConfig, paths.nodes);
          log(`round ${round} of ${settings.rounds}: ${target}, ${pods} pods`);
          samples.push(await measure(paths, target, pods, round));
          await pause(BETWEEN_MS);
        }
      }
    }
    await checkAgentsStillRunning(paths.nodes);
    const block = renderCpuSplit({ machine, command: settings.command, samples });
    process.stdout.write(`${block}\n`);
    if (settings.doc !== undefined) {
      await writeResultsBlock(settings.doc, block, { begin: CPU_SPLIT_BEGIN_MARKER, end: CPU_SPLIT_END_MARKER });
      log(`results written to ${path.relative(process.cwd(), settings.doc)}`);
    }
  } finally {
    for (const client of paths.clients) client.close();
  }
}

main().catch((error: unknown) => {
  log(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exitCode = 1;
});
