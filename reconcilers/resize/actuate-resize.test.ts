import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import pino from 'pino';
import type { ContainerStats, LinuxContainerResources } from '../../cri/types.js';
import { actuateResize, isResizeActuationError } from './actuate-resize.js';
import type { ContainerUpdate, ResizeActions } from './compute-resize-actions.js';
import { PodResourceState } from './resource-state.js';
import { valuesOf } from '../model/resource-values.js';

const MiB = 2 ** 20;
const pod: V1Pod = { metadata: { uid: 'u', name: 'p', namespace: 'd' }, spec: { containers: [{ name: 'c' }] } };

function memoryUpdate(fromMiB: number, toMiB: number): ResizeActions {
  const values = (m: number): ContainerUpdate['current'] => valuesOf({ requests: { cpu: '100m', memory: `${m}Mi` }, limits: { cpu: '100m', memory: `${m}Mi` } });
  return { memory: [{ id: 'cid', name: 'c', current: values(fromMiB), desired: values(toMiB) }], cpu: [], restarts: new Map() };
}

function statsWith(usageBytes: bigint): { listContainerStats: () => Promise<ContainerStats[]> } {
  const memory = { timestamp: 0n, workingSetBytes: usageBytes, availableBytes: undefined, usageBytes, rssBytes: undefined, pageFaults: undefined, majorPageFaults: undefined };
  return { listContainerStats: () => Promise.resolve([{ id: 'cid', name: 'c', labels: {}, cpu: undefined, memory, writableLayer: undefined }]) };
}

describe('actuateResize: memory limit decreases against usage (the kubelet validateMemoryResizeAction)', () => {
  let root = '';
  let state: PodResourceState;
  const calls: LinuxContainerResources[] = [];
  const runtime = {
    updateContainerResources: (_id: string, r: LinuxContainerResources): Promise<void> => {
      calls.push(r);
      return Promise.resolve();
    },
  };

  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'nodelet-actuate-'));
    state = new PodResourceState({ rootDir: root, logger: pino({ level: 'silent' }) });
    state.setAllocated(pod);
    calls.length = 0;
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('refuses a limit at or below what the container uses, and applies nothing', async () => {
    const error = await actuateResize({ pod, actions: memoryUpdate(128, 64), runtime, state, stats: statsWith(BigInt(80 * MiB)) }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(isResizeActuationError(error));
    assert.equal(error.message, `cannot decrease memory limits: [attempting to set container "c" memory limit (${64 * MiB}) below current usage (${80 * MiB})]`);
    assert.deepEqual(calls, []);
    assert.equal(state.actuated('u', 'cid'), undefined);
  });

  it('applies a limit above the usage and records it', async () => {
    await actuateResize({ pod, actions: memoryUpdate(128, 64), runtime, state, stats: statsWith(BigInt(20 * MiB)) });
    assert.deepEqual(calls.map((r) => r.memoryLimitInBytes), [BigInt(64 * MiB)]);
    assert.equal(state.actuated('u', 'cid')?.memoryLimitBytes, 64 * MiB);
  });

  it('checks nothing for an increase', async () => {
    await actuateResize({ pod, actions: memoryUpdate(64, 128), runtime, state });
    assert.equal(calls.length, 1);
  });
});
