/**
 * The reconcile queue against a real Redis when an agent dies mid-reconcile: the next agent runs
 * the orphaned job again at once when the dead one's connection is gone, never touches a live
 * agent's job, and stops recovering early a job that keeps killing agents. Real processes are
 * SIGKILLed where the test is about a dead process (`helpers/doomed-agent.ts`).
 */
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Fixture, Recorder, cleanUpFixtures, eventually, fixture, pod } from './helpers/reconcile-queue-fixture.js';

afterEach(cleanUpFixtures);

/** The ID of the one job the fixture's queue holds in any state. */
async function onlyJobId(f: Fixture): Promise<string> {
  const jobs = await f.inspector().getJobs(['completed', 'failed', 'active', 'waiting', 'delayed']);
  assert.equal(jobs.length, 1, `one job, found ${jobs.map((j) => j.id).join(', ')}`);
  return jobs[0]!.id!;
}

/** Starts `helpers/doomed-agent.ts` on the fixture's queue and waits until its run of `uid` started. */
async function startDoomedAgent(f: Fixture, uid: string, lockMs?: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', new URL('./helpers/doomed-agent.ts', import.meta.url).pathname, f.redisUrl, f.prefix, f.nodeName, uid, ...(lockMs === undefined ? [] : [String(lockMs)])], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => (out += chunk));
  try {
    await eventually(() => out.includes(`running ${uid}`) || child.exitCode !== null, 'the doomed agent runs its reconcile', 30_000);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  assert.equal(child.exitCode, null, `the doomed agent exited early (${String(child.exitCode)})`);
  return child;
}

void describe('reconcile queue: jobs orphaned by a dead agent (real Redis)', () => {
  void it('runs again at once, long before its lock expires, the job of an agent process that was SIGKILLed mid-reconcile', async () => {
    const f = fixture();
    const ref = pod('orphan');
    const doomed = await startDoomedAgent(f, ref.uid);
    doomed.kill('SIGKILL');
    await once(doomed, 'exit');
    const killedAt = performance.now();
    assert.equal((await f.inspector().getActive()).length, 1, 'the dead agent left its job active, locked for 15 s');

    const recorder = new Recorder();
    // The stalled check cannot recover it in this test's time: the lock lives 15 s, checks are a minute apart.
    const survivor = f.queue({ stall: { stalledIntervalMs: 60_000 } });
    await survivor.start(recorder.reconciler('survivor'));
    await eventually(() => recorder.runsOf(ref.uid).length === 1, 'the orphaned job ran again', 5_000);
    assert.ok(recorder.runsOf(ref.uid)[0]!.start - killedAt < 5_000);
    await f.drained(survivor);
    assert.equal(recorder.runs.length, 1);
    assert.equal(await f.redis().get(`${f.prefix}:nodelet-reconcile-${f.nodeName}:${(await onlyJobId(f))}:nodelet-recovered`), '1');
  });

  void it('runs again at once the job of a dead agent whose lock has already expired, before any stalled check', async () => {
    const f = fixture();
    const ref = pod('expired');
    const doomed = await startDoomedAgent(f, ref.uid, 1_000);
    doomed.kill('SIGKILL');
    await once(doomed, 'exit');
    const lockKey = `${f.prefix}:nodelet-reconcile-${f.nodeName}:${await onlyJobId(f)}:lock`;
    await eventually(async () => (await f.redis().exists(lockKey)) === 0, 'the dead agent\'s lock expired', 5_000);
    assert.equal((await f.inspector().getActive()).length, 1, 'the job is still active: no stalled check ran');

    const recorder = new Recorder();
    const survivor = f.queue({ stall: { stalledIntervalMs: 60_000 } });
    const startedAt = performance.now();
    await survivor.start(recorder.reconciler('survivor'));
    await eventually(() => recorder.runsOf(ref.uid).length === 1, 'the orphaned job ran again', 5_000);
    assert.ok(recorder.runsOf(ref.uid)[0]!.start - startedAt < 5_000);
    await f.drained(survivor);
  });

  void it('leaves alone the active job of an agent process that is alive, even one whose run has lasted long', async () => {
    const f = fixture();
    const ref = pod('held');
    const live = await startDoomedAgent(f, ref.uid);
    try {
      const [job] = await f.inspector().getActive();
      assert.ok(job?.processedBy !== undefined, 'the live agent took the job under its name');
      const recorder = new Recorder();
      const other = f.queue({ stall: { lockDurationMs: 1_000, stalledIntervalMs: 300 } });
      await other.start(recorder.reconciler('other'));
      await recorder.event(other, ref, 'updated');
      await sleep(1_500);
      assert.equal(recorder.runs.length, 0, 'nobody ran the UID beside the live run');
      const active = await f.inspector().getActive();
      assert.deepEqual(
        active.map((j) => [j.id, j.processedBy]),
        [[job.id, job.processedBy]],
      );
    } finally {
      live.kill('SIGKILL');
      await once(live, 'exit');
    }
  });

  void it('recovers a job early at most maxStalledCount times, then leaves it to the counted stalled check', async () => {
    const f = fixture();
    const ref = pod('poison');
    const stall = { lockDurationMs: 4_000, stalledIntervalMs: 500, maxStalledCount: 1 };
    const starts: number[] = [];
    const crashes: number[] = [];
    // Two agents die in the pod's reconcile, each forced closed (connections dropped, job kept).
    for (let i = 0; i < 2; i++) {
      const agent = f.queue({ stall, shutdownTimeoutMs: 100 });
      let started = false;
      await agent.start({
        reconcile: async () => {
          started = true;
          starts.push(performance.now());
          await sleep(3_600_000, undefined, { ref: false });
          return {};
        },
      });
      if (i === 0) await agent.enqueue(ref, 'created');
      await eventually(() => started, `run ${i + 1} started`, 10_000);
      await agent.close();
      crashes.push(performance.now());
    }
    const recorder = new Recorder();
    const survivor = f.queue({ stall });
    await survivor.start(recorder.reconciler('survivor'));
    await eventually(() => recorder.runsOf(ref.uid).length === 1, 'the job ran again after its lock expired', 15_000);
    // The first death was recovered at once; the second waited for the 4 s lock to expire.
    assert.ok(starts[1]! - crashes[0]! < 3_000, `the first orphan ran again ${Math.round(starts[1]! - crashes[0]!)} ms after its agent died`);
    const second = recorder.runsOf(ref.uid)[0]!.start - crashes[1]!;
    assert.ok(second >= 3_000, `the second orphan ran again ${Math.round(second)} ms after its agent died, before its lock expired`);
    await f.drained(survivor);
  });
});
