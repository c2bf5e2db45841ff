import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SYNC_LOOP_STALL_MS, agentHealthChecks } from './healthz.js';

function failures(checks: readonly { name: string; failure(): string | undefined }[]): string[] {
  return checks.flatMap((c) => {
    const failure = c.failure();
    return failure === undefined ? [] : [`${c.name}: ${failure}`];
  });
}

describe("the agent's health checks", () => {
  it('fails liveness when the pod loop has not turned for 2 minutes since it last did (or since the loops started), never before they started', () => {
    let now = 1_000_000;
    const loop: { last?: number; started?: number } = {};
    const { liveness } = agentHealthChecks({ housekeeping: { lastSuccessAt: () => loop.last }, podSource: { healthy: () => true }, pleg: { healthy: () => true } }, () => now, () => loop.started);
    assert.deepEqual(failures(liveness), [], 'not started yet: nothing to judge');
    loop.started = now;
    now += SYNC_LOOP_STALL_MS;
    assert.deepEqual(failures(liveness), [], 'at the limit');
    now += 1000;
    assert.deepEqual(failures(liveness), ['syncloop: pod housekeeping has not completed for 121s (limit 120s)']);
    loop.last = now - 2000;
    assert.deepEqual(failures(liveness), []);
  });

  it('fails readiness while the pods are not watched or the runtime is not relisted', () => {
    let watched = false;
    let relisting = false;
    const { readiness } = agentHealthChecks({ housekeeping: { lastSuccessAt: () => undefined }, podSource: { healthy: () => watched }, pleg: { healthy: () => relisting } }, () => 0, () => undefined);
    assert.deepEqual(failures(readiness), ['pod-source: the pods of this node are not watched and synced', 'pleg: the runtime has not been relisted for 3m0s']);
    watched = true;
    relisting = true;
    assert.deepEqual(failures(readiness), []);
  });
});
