import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildNodeAgentStatus, rfc3339, statusSummary, type HealthSample, type NodeAgentStatusInput, type SettingsReport } from './status.js';
import type { NodeAgentStatus } from './types.js';

const T0 = Date.parse('2030-01-01T00:00:00.700Z');
const ready = { ready: true, reason: '', message: '' };
const healthy: HealthSample = {
  runtime: ready,
  queue: ready,
  api: ready,
  queueCounts: { waiting: 2, active: 1, delayed: 3, failed: 4 },
  pods: 5,
  runtimeVersion: 'containerd://1.6.20',
  lastRelistMs: T0 - 1000,
};
const clean: SettingsReport = { applyFailures: [], invalid: [] };

function input(overrides: Partial<NodeAgentStatusInput> = {}): NodeAgentStatusInput {
  return {
    sample: healthy,
    settings: clean,
    paused: false,
    generation: 3,
    nodeName: 'vm',
    agentVersion: 'v0.1.0-nodelet',
    now: new Date(T0),
    previous: undefined,
    ...overrides,
  };
}

function condition(status: NodeAgentStatus, type: string) {
  return status.conditions?.find((c) => c.type === type);
}

describe('buildNodeAgentStatus', () => {
  it('reports a healthy agent Ready with its counts, versions and relist time', () => {
    const status = buildNodeAgentStatus(input());
    assert.equal(status.observedGeneration, 3);
    assert.equal(status.nodeName, 'vm');
    assert.equal(status.pods, 5);
    assert.deepEqual(status.queue, { waiting: 2, active: 1, delayed: 3, failed: 4, depth: 3 });
    assert.equal(status.runtimeVersion, 'containerd://1.6.20');
    assert.equal(status.agentVersion, 'v0.1.0-nodelet');
    assert.equal(status.lastRelistTime, '2029-12-31T23:59:59Z');
    assert.deepEqual(
      status.conditions?.map((c) => [c.type, c.status, c.reason]),
      [
        ['Ready', 'True', 'AgentReady'],
        ['RuntimeReady', 'True', 'RuntimeReady'],
        ['QueueReady', 'True', 'QueueReady'],
        ['APIReady', 'True', 'APIReady'],
        ['SettingsApplied', 'True', 'Applied'],
      ],
    );
    for (const c of status.conditions ?? []) {
      assert.equal(c.lastTransitionTime, '2030-01-01T00:00:00Z');
      assert.equal(c.observedGeneration, 3);
    }
  });

  it('is not Ready when the runtime is not, naming the runtime reason and message', () => {
    const status = buildNodeAgentStatus(input({ sample: { ...healthy, runtime: { ready: false, reason: 'NetworkPluginNotReady', message: 'cni config uninitialized' } } }));
    assert.deepEqual(condition(status, 'RuntimeReady'), {
      type: 'RuntimeReady',
      status: 'False',
      reason: 'NetworkPluginNotReady',
      message: 'cni config uninitialized',
      lastTransitionTime: '2030-01-01T00:00:00Z',
      observedGeneration: 3,
    });
    assert.equal(condition(status, 'Ready')?.status, 'False');
    assert.equal(condition(status, 'Ready')?.reason, 'RuntimeNotReady');
    assert.equal(condition(status, 'Ready')?.message, 'RuntimeReady: cni config uninitialized');
  });

  it('lists every failing part in Ready and uses a default reason when a part gives none', () => {
    const status = buildNodeAgentStatus(
      input({ sample: { ...healthy, queue: { ready: false, reason: '', message: 'redis down' }, api: { ready: false, reason: 'PodWatchNotSynced', message: 'no list yet' } } }),
    );
    assert.equal(condition(status, 'QueueReady')?.reason, 'QueueNotReady');
    assert.equal(condition(status, 'Ready')?.reason, 'QueueNotReady');
    assert.equal(condition(status, 'Ready')?.message, 'QueueReady: redis down; APIReady: no list yet');
  });

  it('keeps transition times of unchanged conditions and moves those whose status changed', () => {
    const first = buildNodeAgentStatus(input());
    const later = new Date(T0 + 60_000);
    const second = buildNodeAgentStatus(
      input({ now: later, previous: first, sample: { ...healthy, api: { ready: false, reason: 'NodeStatusStale', message: 'lease not renewed' } } }),
    );
    assert.equal(condition(second, 'RuntimeReady')?.lastTransitionTime, '2030-01-01T00:00:00Z');
    assert.equal(condition(second, 'APIReady')?.lastTransitionTime, '2030-01-01T00:01:00Z');
    assert.equal(condition(second, 'Ready')?.lastTransitionTime, '2030-01-01T00:01:00Z');
    const third = buildNodeAgentStatus(input({ now: new Date(T0 + 120_000), previous: second }));
    assert.equal(condition(third, 'APIReady')?.lastTransitionTime, '2030-01-01T00:02:00Z');
    assert.equal(condition(third, 'SettingsApplied')?.lastTransitionTime, '2030-01-01T00:00:00Z');
  });

  it('keeps the last queue counts and runtime version while they cannot be read', () => {
    const first = buildNodeAgentStatus(input());
    const second = buildNodeAgentStatus(input({ previous: first, sample: { ...healthy, queueCounts: undefined, runtimeVersion: undefined } }));
    assert.deepEqual(second.queue, first.queue);
    assert.equal(second.runtimeVersion, 'containerd://1.6.20');
  });

  it('says InvalidSettings with the field when a setting was refused, and stays Ready', () => {
    const status = buildNodeAgentStatus(input({ settings: { ...clean, invalid: [{ field: 'spec.logRotation.containerLogMaxFiles', message: 'must be an integer from 2 to 20, got 1' }] } }));
    const applied = condition(status, 'SettingsApplied');
    assert.equal(applied?.status, 'False');
    assert.equal(applied?.reason, 'InvalidSettings');
    assert.match(applied?.message ?? '', /spec\.logRotation\.containerLogMaxFiles must be an integer/);
    assert.equal(condition(status, 'Ready')?.status, 'True');
  });

  it('names the most serious settings problem in the reason and all of them in the message', () => {
    const status = buildNodeAgentStatus(
      input({
        settings: {
          applyFailures: [{ field: 'spec.workerConcurrency', message: 'queue closed' }],
          invalid: [{ field: 'spec.maxPods', message: 'must be an integer from 1 to 1000, got 0' }],
        },
      }),
    );
    const applied = condition(status, 'SettingsApplied');
    assert.equal(applied?.reason, 'ApplyFailed');
    assert.match(applied?.message ?? '', /spec\.workerConcurrency queue closed/);
    assert.match(applied?.message ?? '', /spec\.maxPods must be an integer/);
    const invalidOnly = buildNodeAgentStatus(input({ settings: { ...clean, invalid: [{ field: 'spec.maxPods', message: 'bad' }] } }));
    assert.equal(condition(invalidOnly, 'SettingsApplied')?.reason, 'InvalidSettings');
  });

  it('says in Ready that the agent is paused', () => {
    assert.match(condition(buildNodeAgentStatus(input({ paused: true })), 'Ready')?.message ?? '', /paused/);
  });

  it('omits generation fields when the object has no generation yet', () => {
    const status = buildNodeAgentStatus(input({ generation: undefined }));
    assert.equal(status.observedGeneration, undefined);
    assert.equal(condition(status, 'Ready')?.observedGeneration, undefined);
  });
});

describe('statusSummary', () => {
  it('changes with counts and condition statuses but not with times or messages alone', () => {
    const a = buildNodeAgentStatus(input());
    const later = buildNodeAgentStatus(input({ now: new Date(T0 + 5000), previous: a, sample: { ...healthy, lastRelistMs: T0 + 4000 } }));
    assert.equal(statusSummary(later), statusSummary(a));
    const morePods = buildNodeAgentStatus(input({ previous: a, sample: { ...healthy, pods: 6 } }));
    assert.notEqual(statusSummary(morePods), statusSummary(a));
    const notReady = buildNodeAgentStatus(input({ previous: a, sample: { ...healthy, runtime: { ready: false, reason: 'X', message: 'y' } } }));
    assert.notEqual(statusSummary(notReady), statusSummary(a));
  });
});

describe('rfc3339', () => {
  it('truncates to whole seconds without a fraction', () => {
    assert.equal(rfc3339(Date.parse('2030-05-06T07:08:09.999Z')), '2030-05-06T07:08:09Z');
  });
});
