/**
 * How long after a container exits the runtime's listing shows it exited
 * (`npm run bench:exits`; not a test: it asserts nothing about speed). That is the floor under
 * status freshness (`bench/status-freshness.ts`): an agent's relist can only see an exit once
 * ListContainers reports it, and containerd 1.6 reports it once it has handled the task's exit,
 * not at the moment it records as `finishedAt`.
 *
 * Per sample, straight through the CRI of nodelet's node (no agent, no API server): a sandbox and
 * a container that sleeps a moment and exits 0 (`bench/raw-cri-startup.ts`'s configs, labelled
 * with its node name of its own, which the agent leaves alone), then ListContainers for that
 * container every few milliseconds until it shows CONTAINER_EXITED; the lag is the start of that
 * call minus the container's `finishedAt`. The sandbox is then stopped and removed. Printed only.
 * Not on the kubelet node's containerd: the kubelet kills a running sandbox of a pod it does not
 * know within seconds (its housekeeping), which cut short the first try of that.
 *
 *   npm run bench:exits -- [--samples 10]
 */
import os from 'node:os';
import path from 'node:path';
import { mkdtemp, rm } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { V1Container } from '@kubernetes/client-node';
import { createCriClient } from '../cri/grpc-client.js';
import type { RuntimeService } from '../cri/types.js';
import { positiveInts } from './args.js';
import { BENCH_IMAGE, pause } from './agent-startup.js';
import { requireEnv } from './agent-node.js';
import { benchImageRef, removeRawLeftovers, startRawPod, syntheticPod } from './raw-cri-startup.js';
import { percentile } from './stats.js';

/** How often the listing is read while waiting for the exit. */
const POLL_MS = 5;
/** Give up on one sample after this long: the container sleeps far less. */
const SAMPLE_TIMEOUT_MS = 30_000;
const SLEEP_SECONDS = 1.3;

function log(line: string): void {
  process.stderr.write(`[bench:exits ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}

/** Milliseconds from the container's recorded exit to the first listing that shows it exited. */
async function exitLagMs(runtime: RuntimeService, imageRef: string, logRoot: string, name: string): Promise<number> {
  const container: V1Container = { name: 'main', image: BENCH_IMAGE, command: ['sleep', String(SLEEP_SECONDS)] };
  const { sandboxId, containerId } = await startRawPod(runtime, syntheticPod('bench-exits', name, container), { imageRef, logRoot });
  try {
    const deadline = Date.now() + SAMPLE_TIMEOUT_MS;
    for (;;) {
      const asked = Date.now();
      const [listed] = await runtime.listContainers({ id: containerId });
      if (listed?.state === 'CONTAINER_EXITED') {
        const status = await runtime.containerStatus(containerId);
        // A kill (by anything else on the node) is not the exit this measures.
        if (status.exitCode !== 0) throw new Error(`container ${containerId} exited with ${status.exitCode}, not 0: something killed it`);
        return asked - Number(status.finishedAt / 1_000_000n);
      }
      if (Date.now() > deadline) throw new Error(`container ${containerId} not listed as exited within ${SAMPLE_TIMEOUT_MS} ms`);
      await pause(POLL_MS);
    }
  } finally {
    await runtime.stopPodSandbox(sandboxId);
    await runtime.removePodSandbox(sandboxId);
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ args: process.argv.slice(2), options: { samples: { type: 'string', default: '10' } } });
  const samples = positiveInts(values.samples, '--samples')[0] ?? 10;
  const cri = createCriClient({ endpoint: requireEnv('CONTAINER_RUNTIME_ENDPOINT'), defaultTimeoutMs: 60_000 });
  const logRoot = await mkdtemp(path.join(os.tmpdir(), 'nodelet-bench-exits-'));
  const lags: number[] = [];
  try {
    await removeRawLeftovers(cri.runtime);
    const imageRef = await benchImageRef(cri.image);
    for (let i = 0; i < samples; i += 1) {
      const lag = await exitLagMs(cri.runtime, imageRef, logRoot, `exit-${i}`);
      lags.push(lag);
      log(`sample ${i + 1} of ${samples}: exit listed ${lag} ms after finishedAt`);
    }
  } finally {
    await removeRawLeftovers(cri.runtime);
    cri.close();
    await rm(logRoot, { recursive: true, force: true });
  }
  process.stdout.write(`Command: \`npm run bench:exits -- --samples ${samples}\`: container exit (CRI finishedAt) → ListContainers of nodelet's node shows it exited, polled every ${POLL_MS} ms\n`);
  process.stdout.write(`exit → listed as exited, ms, min / median / max over ${lags.length}: ${Math.min(...lags)} / ${percentile(lags, 50)} / ${Math.max(...lags)}\n`);
}

main().catch((e: unknown) => {
  log(`failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  process.exitCode = 1;
});
