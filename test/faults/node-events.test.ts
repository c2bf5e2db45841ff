/**
 * Fault: the agent is stopped and started again. As the kubelet's, the Node's events say so:
 * `kubectl describe node` lists a new `Starting` event from nodelet, about the Node by its UID, with
 * the kubelet's start-up events (the `CgroupV1` warning on a cgroup v1 host, which this machine's
 * kind is; `NodeAllocatableEnforced`, pods being held to the allocatable), and no condition event (the node's conditions did not change while it was away for less than the
 * node controller's grace period). The condition events themselves are tested under pressure in
 * `test/e2e/eviction.test.ts`.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { before, describe, it } from 'node:test';
import { cgroupLayout } from '../../reconcilers/cgroups/host-cgroupfs.js';
import type { CoreV1Event, V1Node } from '@kubernetes/client-node';
import { NODE_NAME, eventually, kubectl, requireCluster } from '../e2e/helpers.js';
import { clusterUp, ensureClusterUp, stopHarnessAgent } from './harness.js';

async function nodeEvents(): Promise<CoreV1Event[]> {
  const out = await kubectl(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.kind=Node,involvedObject.name=${NODE_NAME}`, '-o', 'json']);
  return (JSON.parse(out) as { items: CoreV1Event[] }).items.filter((e) => e.source?.component === 'nodelet');
}

/** Occurrences of each reason (an event's count included). */
function countsByReason(events: readonly CoreV1Event[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const e of events) counts.set(e.reason ?? '', (counts.get(e.reason ?? '') ?? 0) + (e.count ?? 1));
  return counts;
}

describe("the Node's events across an agent restart", () => {
  before(async () => {
    requireCluster();
    await ensureClusterUp();
  });

  it('records one new Starting event and no condition event; describe node shows them', async () => {
    const node = JSON.parse(await kubectl(['get', 'node', NODE_NAME, '-o', 'json'])) as V1Node;
    const uid = node.metadata?.uid ?? '';
    const before = await nodeEvents();
    assert.ok(before.length > 0, 'the agent that registered the Node recorded events');
    assert.ok(before.every((e) => e.involvedObject.uid === uid), 'every event is about this Node (by UID)');
    const counts = countsByReason(before);
    assert.ok((counts.get('Starting') ?? 0) >= 1, 'the running agent recorded its start');

    await stopHarnessAgent();
    await clusterUp();
    const after = await eventually('a new Starting event', async () => {
      const events = await nodeEvents();
      return (countsByReason(events).get('Starting') ?? 0) === (counts.get('Starting') ?? 0) + 1 ? events : undefined;
    });
    // A heartbeat or two later, still nothing else new.
    await new Promise((resolve) => setTimeout(resolve, 12_000));
    const settled = countsByReason(await nodeEvents());
    const added = [...settled].filter(([reason, n]) => n !== (counts.get(reason) ?? 0)).map(([reason, n]) => `${reason} +${n - (counts.get(reason) ?? 0)}`);
    const v1 = cgroupLayout(await readFile('/proc/self/mountinfo', 'utf8')).version === 1;
    assert.deepEqual(added, ['Starting +1', ...(v1 ? ['CgroupV1 +1'] : []), 'NodeAllocatableEnforced +1']);
    const starting = after.filter((e) => e.reason === 'Starting').at(-1);
    assert.equal(starting?.message, 'Starting nodelet.');
    assert.equal(starting.involvedObject.uid, uid);
    const described = await kubectl(['describe', 'node', NODE_NAME]);
    assert.match(described, /Normal\s+Starting\s+.*nodelet\s+Starting nodelet\./);
    assert.equal(/Warning\s+CgroupV1\s+.*cgroup v1 detected\./.test(described), v1);
    assert.match(described, /Normal\s+NodeAllocatableEnforced\s+.*Updated Node Allocatable limit across pods/);
  });
});
