/**
 * What each kind of run measured, as the report's samples (in the report's units: seconds, pods/s,
 * milliseconds of CPU, MiB, millicores). Pure.
 */
import type { BatchResult } from './agent-startup.js';
import type { MeasureId, Sample, Target } from './compare.js';
import type { RawRunResult } from './raw-cri-startup.js';
import { percentile, type LatencySummary } from './stats.js';

/** The node's maxPods: only a batch above it records how many pods the node rejected. */
export const MAX_PODS = 110;

const MIB = 2 ** 20;

type Emit = (measure: MeasureId, value: number) => Sample;

function emitter(target: Target, size: number | undefined, round: number): Emit {
  return (measure, value) => ({ measure, size, target, round, value });
}

function createSamples(emit: Emit, create: LatencySummary): Sample[] {
  return [emit('create.p50', create.p50Ms / 1000), emit('create.p99', create.p99Ms / 1000), emit('create.throughput', create.throughputPerSec)];
}

/** One agent batch of `result.count` pods. */
export function batchSamples(target: Target, round: number, result: BatchResult): Sample[] {
  const emit = emitter(target, result.count, round);
  const samples = [
    ...createSamples(emit, result.create),
    emit('delete.gone', result.deleteGoneMs / 1000),
    emit('agent.cpuPerPod', ((result.cpuSecondsCreate + result.cpuSecondsDelete) * 1000) / result.count),
    emit('agent.peakRss', result.peakRssBytes / MIB),
  ];
  if (result.count > MAX_PODS) samples.push(emit('create.rejected', result.rejected));
  if (result.idle !== undefined && result.idle.windowMs > 0) {
    samples.push(emit('idle.cpu', (result.idle.cpuSeconds * 1_000_000) / result.idle.windowMs), emit('idle.rss', result.idle.rssBytes / MIB));
  }
  return samples;
}

/** One raw CRI batch: its create latencies, and its teardown as delete → gone. */
export function rawSamples(round: number, result: RawRunResult): Sample[] {
  const emit = emitter('raw CRI', result.count, round);
  return [...createSamples(emit, result.create), emit('delete.gone', result.teardownMs / 1000)];
}

/** One status-freshness run: exit → API per pod, in milliseconds. */
export function freshnessSamples(target: Target, round: number, delaysMs: readonly number[]): Sample[] {
  if (delaysMs.length === 0) return [];
  const emit = emitter(target, undefined, round);
  return [emit('fresh.p50', percentile(delaysMs, 50) / 1000), emit('fresh.max', Math.max(...delaysMs) / 1000)];
}

/** One steady run: create → Running per pod, and the agent's CPU over it. */
export function steadySamples(target: Target, round: number, result: { latenciesMs: readonly number[]; cpuSeconds: number }): Sample[] {
  if (result.latenciesMs.length === 0) return [];
  const emit = emitter(target, undefined, round);
  return [
    emit('steady.p50', percentile(result.latenciesMs, 50) / 1000),
    emit('steady.p99', percentile(result.latenciesMs, 99) / 1000),
    emit('steady.cpuPerPod', (result.cpuSeconds * 1000) / result.latenciesMs.length),
  ];
}
