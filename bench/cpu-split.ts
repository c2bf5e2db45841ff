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
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { createCriClient, type CriClient } from '../cri/grpc-client.js';
import { agentConcurrency } from './agent-process.js';
import { activePodsOn, pidFromFile, type AgentNode } from './agent-node.js';
import { benchAgentBatch, pause, waitUntil, type CreateWindow } from './agent-startup.js';
import { roundOrder, type Target } from './compare.js';
import { CPU_SPLIT_BEGIN_MARKER, CPU_SPLIT_END_MARKER, renderCpuSplit, splitCpu, type CpuRoles, type CpuSplitSample } from './cpu-split-report.js';
import { takeCpuSnapshot, type CpuSnapshot } from './machine-cpu.js';
import { describeMachine } from './machine.js';
import { benchRawCri, removeRawLeftovers } from './raw-cri-startup.js';
import { updateDocument } from './report.js';

const REPO_DIR = path.resolve(import.meta.dirname, '..');
/** Pause between two batches, so one's tail (its runtime's cleanup) is not the next one's load. */
const BETWEEN_MS = 10_000;
const TIMEOUT_MS = 600_000;

interface Settings {
  readonly sizes: readonly number[];
  readonly rounds: number;
  readonly doc: string | undefined;
  readonly command: string;
}

function log(line: string): void {
  process.stderr.write(`[bench:cpu ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}

function requireEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set: source .cluster/env and .cluster/kubelet/env (npm run bench:cpu does)`);
  return value;
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
      sizes: { type: 'string', default: '30,110' },
      rounds: { type: 'string', default: '3' },
      doc: { type: 'string', default: path.join(REPO_DIR, 'docs', 'benchmarks.md') },
      'no-doc': { type: 'boolean', default: false },
    },
  });
  const options = argv.filter((a) => a !== '--no-doc').join(' ');
  return {
    sizes: positiveInts(values.sizes, '--sizes'),
    rounds: positiveInts(values.rounds, '--rounds')[0] ?? 3,
    doc: values['no-doc'] ? undefined : values.doc,
    command: `npm run bench:cpu${options === '' ? '' : ` -- ${options}`}`,
  };
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

async function waitForIdleNodes(paths: Paths): Promise<void> {
  const idle = async (): Promise<boolean> => (await Promise.all(paths.nodes.map((n) => activePodsOn(paths.kubeConfig, n.nodeName)))).every((c) => c.bench + c.other === 0);
  await waitUntil('idle agent nodes (no pod on either)', idle, 120_000);
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

/** Throws when an agent restarted during the run: its pid would no longer name its process, and its CPU would count as other. */
async function checkSameAgents(nodes: readonly AgentNode[]): Promise<void> {
  for (const node of nodes) {
    const cmdline = await readFile(`/proc/${node.pid}/cmdline`, 'utf8').catch(() => '');
    if (!cmdline.includes(node.target)) throw new Error(`the ${node.target} agent (pid ${node.pid}) exited during the run`);
  }
}

async function connect(): Promise<Paths> {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(requireEnv('KUBECONFIG'));
  const clusterDir = process.env.CLUSTER_DIR ?? path.join(REPO_DIR, '.cluster');
  const raw = createCriClient({ endpoint: requireEnv('CONTAINER_RUNTIME_ENDPOINT'), defaultTimeoutMs: 120_000 });
  const kubeletRuntime = createCriClient({ endpoint: requireEnv('KUBELET_CRI_ENDPOINT'), defaultTimeoutMs: 120_000 });
  const nodeletPid = await pidFromFile(path.join(clusterDir, 'pids', 'nodelet.pid'), 'nodelet');
  const nodes: AgentNode[] = [
    { target: 'nodelet', nodeName: requireEnv('NODE_NAME'), pid: nodeletPid, runtime: raw.runtime, sandboxGoneWhen: 'removed' },
    { target: 'kubelet', nodeName: requireEnv('KUBELET_NODE_NAME'), pid: await pidFromFile(requireEnv('KUBELET_PID_FILE'), 'kubelet'), runtime: kubeletRuntime.runtime, sandboxGoneWhen: 'stopped' },
  ];
  return { kubeConfig, nodes, raw, rawConcurrency: await agentConcurrency(nodeletPid), clients: [raw, kubeletRuntime] };
}

async function main(): Promise<void> {
  const settings = parseSettings(process.argv.slice(2));
  const paths = await connect();
  try {
    await removeRawLeftovers(paths.raw.runtime);
    const machine = await describeMachine({ runtime: paths.raw.runtime, kubeConfig: paths.kubeConfig, repoDir: REPO_DIR });
    const samples: CpuSplitSample[] = [];
    for (let round = 1; round <= settings.rounds; round += 1) {
      for (const pods of settings.sizes) {
        for (const target of roundOrder<Target>(['nodelet', 'kubelet', 'raw CRI'], round - 1)) {
          await waitForIdleNodes(paths);
          log(`round ${round} of ${settings.rounds}: ${target}, ${pods} pods`);
          samples.push(await measure(paths, target, pods, round));
          await pause(BETWEEN_MS);
        }
      }
    }
    await checkSameAgents(paths.nodes);
    const block = renderCpuSplit({ machine, command: settings.command, samples });
    process.stdout.write(`${block}\n`);
    if (settings.doc !== undefined) {
      const existing = await readFile(settings.doc, 'utf8').catch(() => undefined);
      await writeFile(settings.doc, updateDocument(existing, block, { begin: CPU_SPLIT_BEGIN_MARKER, end: CPU_SPLIT_END_MARKER }));
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
