import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { groupPodsByPriority, periodRequestedSeconds, podShutdownGraceSeconds, shutdownGroups, SYSTEM_CRITICAL_PRIORITY, validateShutdownSettings } from './shutdown-plan.js';

const pod = (name: string, priority?: number, grace?: number): V1Pod => ({ metadata: { name }, spec: { containers: [], ...(priority === undefined ? {} : { priority }), ...(grace === undefined ? {} : { terminationGracePeriodSeconds: grace }) } });
const names = (pods: readonly V1Pod[]): string[] => pods.map((p) => p.metadata?.name ?? '');

describe('graceful node shutdown plan', () => {
  it('splits shutdownGracePeriod into regular and critical groups as the kubelet migrates it', () => {
    assert.deepEqual(shutdownGroups({ gracePeriodSeconds: 30, criticalPodsGracePeriodSeconds: 10, byPodPriority: [] }), [
      { priority: 0, shutdownGracePeriodSeconds: 20 },
      { priority: SYSTEM_CRITICAL_PRIORITY, shutdownGracePeriodSeconds: 10 },
    ]);
    assert.deepEqual(shutdownGroups({ gracePeriodSeconds: 0, criticalPodsGracePeriodSeconds: 0, byPodPriority: [] }), []);
    assert.equal(periodRequestedSeconds(shutdownGroups({ gracePeriodSeconds: 30, criticalPodsGracePeriodSeconds: 10, byPodPriority: [] })), 30);
  });

  it('sorts by-priority groups ascending and puts each pod in the highest group not above it', () => {
    const groups = shutdownGroups({ gracePeriodSeconds: 0, criticalPodsGracePeriodSeconds: 0, byPodPriority: [{ priority: 100, shutdownGracePeriodSeconds: 5 }, { priority: 10, shutdownGracePeriodSeconds: 7 }, { priority: 1000, shutdownGracePeriodSeconds: 3 }] });
    assert.deepEqual(groups.map((g) => g.priority), [10, 100, 1000]);
    const grouped = groupPodsByPriority(groups, [pod('below', 1), pod('none'), pod('ten', 10), pod('mid', 500), pod('top', 2_000_000_000), pod('hundred', 100)]);
    assert.deepEqual(grouped.map((g) => names(g.pods)), [['below', 'none', 'ten'], ['mid', 'hundred'], ['top']]);
    assert.equal(periodRequestedSeconds(groups), 15);
  });

  it("gives a pod its group's period, or its own grace when that is shorter", () => {
    const group = { priority: 0, shutdownGracePeriodSeconds: 20 };
    assert.equal(podShutdownGraceSeconds(group, pod('short', 0, 5)), 5);
    assert.equal(podShutdownGraceSeconds(group, pod('long', 0, 60)), 20);
    assert.equal(podShutdownGraceSeconds(group, pod('unset')), 20);
  });

  it("refuses what the kubelet's validation refuses", () => {
    assert.throws(() => { validateShutdownSettings({ gracePeriodSeconds: 10, criticalPodsGracePeriodSeconds: 20, byPodPriority: [] }); }, /must be <= shutdownGracePeriod/);
    assert.throws(() => { validateShutdownSettings({ gracePeriodSeconds: 10, criticalPodsGracePeriodSeconds: 0, byPodPriority: [{ priority: 0, shutdownGracePeriodSeconds: 1 }] }); }, /cannot specify both/);
    validateShutdownSettings({ gracePeriodSeconds: 30, criticalPodsGracePeriodSeconds: 30, byPodPriority: [] });
  });
});
