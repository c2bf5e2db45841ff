/** The Node's events of a heartbeat, as the kubelet's status setters record them. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1NodeCondition, V1NodeStatus } from '@kubernetes/client-node';
import { nodeStatusEvents, schedulableEvent, startingEvent } from './node-events.js';

const cond = (type: string, status: string): V1NodeCondition => ({ type, status });
const status = (conditions: [string, string][], bootID = 'boot-1'): V1NodeStatus => ({
  conditions: conditions.map(([t, s]) => cond(t, s)),
  nodeInfo: { bootID } as V1NodeStatus['nodeInfo'],
});
const healthy: [string, string][] = [['MemoryPressure', 'False'], ['DiskPressure', 'False'], ['PIDPressure', 'False'], ['Ready', 'True']];
const reasons = (previous: V1NodeStatus | undefined, next: V1NodeStatus): string[] => nodeStatusEvents('vm', previous, next).map((e) => `${e.type} ${e.reason}: ${e.message}`);

describe('node events', () => {
  it('a new Node: the three pressure conditions appear, Ready does not count (the kubelet records it only on a change)', () => {
    assert.deepEqual(reasons(undefined, status(healthy)), [
      'Normal NodeHasSufficientMemory: Node vm status is now: NodeHasSufficientMemory',
      'Normal NodeHasNoDiskPressure: Node vm status is now: NodeHasNoDiskPressure',
      'Normal NodeHasSufficientPID: Node vm status is now: NodeHasSufficientPID',
    ]);
  });

  it('nothing when nothing changed', () => {
    assert.deepEqual(reasons(status(healthy), status(healthy)), []);
  });

  it("back from the node controller's Unknown: every condition is recorded again, Ready as NodeReady", () => {
    const unknown = status(healthy.map(([t]) => [t, 'Unknown']));
    assert.deepEqual(
      reasons(unknown, status(healthy)).map((r) => r.split(':')[0]),
      ['Normal NodeHasSufficientMemory', 'Normal NodeHasNoDiskPressure', 'Normal NodeHasSufficientPID', 'Normal NodeReady'],
    );
  });

  it('pressure and readiness turning bad, then good', () => {
    const bad = status([['MemoryPressure', 'True'], ['DiskPressure', 'True'], ['PIDPressure', 'True'], ['Ready', 'False']]);
    assert.deepEqual(reasons(status(healthy), bad).map((r) => r.split(':')[0]), ['Normal NodeHasInsufficientMemory', 'Normal NodeHasDiskPressure', 'Normal NodeHasInsufficientPID', 'Normal NodeNotReady']);
    assert.deepEqual(reasons(bad, status(healthy)).map((r) => r.split(':')[0]), ['Normal NodeHasSufficientMemory', 'Normal NodeHasNoDiskPressure', 'Normal NodeHasSufficientPID', 'Normal NodeReady']);
  });

  it('a new boot ID is a Warning Rebooted; a first boot ID is not', () => {
    assert.deepEqual(reasons(status(healthy, 'boot-1'), status(healthy, 'boot-2')), ['Warning Rebooted: Node vm has been rebooted, boot id: boot-2']);
    assert.deepEqual(reasons(status(healthy, ''), status(healthy, 'boot-2')), []);
  });

  it('cordoning and uncordoning; the agent start', () => {
    assert.equal(schedulableEvent('vm', false, false), undefined);
    assert.deepEqual(schedulableEvent('vm', false, true), { type: 'Normal', reason: 'NodeNotSchedulable', message: 'Node vm status is now: NodeNotSchedulable' });
    assert.deepEqual(schedulableEvent('vm', true, false), { type: 'Normal', reason: 'NodeSchedulable', message: 'Node vm status is now: NodeSchedulable' });
    assert.deepEqual(startingEvent(), { type: 'Normal', reason: 'Starting', message: 'Starting nodelet.' });
  });
});
