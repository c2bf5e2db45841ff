/**
 * Lifecycle hooks in the assembled per-pod machinery (`assemblePodSync`), on the fake runtime and
 * the fake clock: postStart runs right after StartContainer and the start waits for it; a failed
 * postStart kills the container and fails the start with `PostStartHookError`, restarted on the
 * next sync under the restart backoff; preStop runs before StopContainer, bounded by the grace
 * period, and what it took comes off the grace period StopContainer gets; a failed preStop is an
 * event and the stop still happens; a cancelled run stops a running hook and records nothing.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { V1Container, V1LifecycleHandler, V1Pod } from '@kubernetes/client-node';
import type { ExecSyncResult } from '../../cri/types.js';
import { basePod, UID } from '../../test/doubles/pod-fixtures.js';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';
import { isContainerStartError } from '../model/sync-errors.js';

function exit(code: number, stdout = ''): ExecSyncResult {
  return { stdout: Buffer.from(stdout), stderr: Buffer.alloc(0), exitCode: code };
}

/** A pod whose `app` container has the given hooks (`sidecar` has none), with a grace period. */
function hookedPod(hooks: { postStart?: V1LifecycleHandler; preStop?: V1LifecycleHandler }, graceSeconds = 30, mutateApp?: (app: V1Container) => void): V1Pod {
  return basePod((p) => {
    p.spec!.terminationGracePeriodSeconds = graceSeconds;
    const app = p.spec!.containers[0]!;
    app.lifecycle = hooks;
    mutateApp?.(app);
  });
}

/** Waits (real time, at most 2 s) until `condition` holds: the reconcile runs real file I/O before it reaches the runtime. */
async function until(what: string, condition: () => boolean): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  assert.fail(`timed out waiting for ${what}`);
}

function appStatus(h: ReconcilerHarness): ReturnType<NonNullable<NonNullable<V1Pod['status']>['containerStatuses']>['find']> {
  return h.status.podStatus(UID)?.containerStatuses?.find((c) => c.name === 'app');
}

/** Container names by ID, remembered so calls on containers removed since still read by name. */
const knownNames = new WeakMap<ReconcilerHarness, Map<string, string>>();

async function rememberNames(h: ReconcilerHarness): Promise<void> {
  const names = knownNames.get(h) ?? new Map<string, string>();
  for (const c of await h.runtime.listContainers()) names.set(c.id, c.metadata.name);
  knownNames.set(h, names);
}

function nameOf(h: ReconcilerHarness, id: string): string {
  return h.runtime.getContainer(id)?.config.metadata.name ?? knownNames.get(h)?.get(id) ?? id;
}

/** Runtime calls in order, as `method:container-name` for start/stop and `exec:<cmd[0]>` for ExecSync. */
function callLog(h: ReconcilerHarness): string[] {
  return h.runtime.calls.flatMap((c) => {
    const id = String(c.args[0]);
    if (c.method === 'startContainer' || c.method === 'stopContainer') {
      return [`${c.method === 'startContainer' ? 'start' : 'stop'}:${nameOf(h, id)}`];
    }
    if (c.method === 'execSync') return [`exec:${(c.args[1] as readonly string[])[0] ?? ''}`];
    return [];
  });
}

function stopsOf(h: ReconcilerHarness, name: string): number[] {
  return h.runtime.callsTo('stopContainer').filter((c) => nameOf(h, String(c.args[0])) === name).map((c) => Number(c.args[1]));
}

async function appIds(h: ReconcilerHarness): Promise<{ id: string; state: string }[]> {
  return (await h.runtime.listContainers({ labelSelector: { 'io.kubernetes.container.name': 'app' } })).map((c) => ({ id: c.id, state: c.state }));
}

function deleteWithGrace(h: ReconcilerHarness, graceSeconds: number): void {
  const pod = h.store.get(UID)!;
  h.store.set(UID, { ...pod, metadata: { ...pod.metadata, deletionTimestamp: new Date(h.clock.now()), deletionGracePeriodSeconds: graceSeconds } });
}

describe('postStart hooks in the assembled reconciler', () => {
  let h: ReconcilerHarness;

  beforeEach(async () => {
    h = await createReconcilerHarness();
  });

  afterEach(async () => {
    await h.cleanup();
  });

  it('runs the exec hook right after StartContainer, with no timeout, and starts the next container only once it is done', async () => {
    h.store.set(UID, hookedPod({ postStart: { exec: { command: ['hook', 'started'] } } }));
    await h.reconciler().reconcile(ref);
    assert.deepEqual(callLog(h), ['start:app', 'exec:hook', 'start:sidecar']);
    const exec = h.runtime.callsTo('execSync')[0];
    assert.deepEqual(exec?.args.slice(1, 3), [['hook', 'started'], 0]);
    assert.ok((exec?.args[3] as { signal?: AbortSignal } | undefined) !== undefined, 'the call carries the run options');
    assert.deepEqual(h.events.reasons().filter((r) => r.includes('Hook')), []);
    assert.ok(appStatus(h)?.state?.running !== undefined);
    assert.equal(appStatus(h)?.restartCount, 0);
  });

  it('kills the container when the hook fails, fails the start with PostStartHookError, restarts it on the next sync, then backs off', async () => {
    h.runtime.execHandler = (_id, cmd) => (cmd[0] === 'sh' ? exit(1, 'no config') : exit(0));
    h.store.set(UID, hookedPod({ postStart: { exec: { command: ['sh', '-c', 'exit 1'] } } }));
    await assert.rejects(h.reconciler().reconcile(ref), (e) => isContainerStartError(e) && e.reason === 'PostStartHookError');
    const [first] = await appIds(h);
    assert.equal(first?.state, 'CONTAINER_EXITED', 'the container whose hook failed was stopped');
    assert.deepEqual(stopsOf(h, 'app'), [30], "stopped with the pod's grace period");
    assert.deepEqual(callLog(h), ['start:app', 'exec:sh', 'stop:app', 'start:sidecar'], 'killed before the next container starts');
    const failed = h.events.events.filter((e) => e.reason === 'FailedPostStartHook');
    assert.deepEqual(failed.map((e) => [e.type, e.message, e.fieldPath]), [['Warning', 'PostStartHook failed', 'spec.containers{app}']]);
    assert.ok(h.events.events.some((e) => e.reason === 'Killing' && e.message === 'FailedPostStartHook' && e.fieldPath === 'spec.containers{app}'));
    const waiting = appStatus(h)?.state?.waiting;
    assert.equal(waiting?.reason, 'PostStartHookError');
    assert.equal(waiting?.message, `Exec lifecycle hook ([sh -c exit 1]) for Container "app" in Pod "web_default(uid-1)" failed - error: command 'sh -c exit 1' exited with 1: , message: "no config"`);
    assert.equal(appStatus(h)?.lastState?.terminated?.exitCode, 137);
    // The next sync restarts it (its first restart does not wait), the hook fails again…
    await assert.rejects(h.reconciler().reconcile(ref), (e) => isContainerStartError(e) && e.reason === 'PostStartHookError');
    assert.equal((await appIds(h)).length, 2);
    assert.equal(appStatus(h)?.restartCount, 1);
    assert.equal(h.events.events.filter((e) => e.reason === 'FailedPostStartHook').length, 2);
    // …and the one after waits out the restart backoff.
    await h.reconciler().reconcile(ref);
    assert.equal(appStatus(h)?.state?.waiting?.reason, 'CrashLoopBackOff');
    assert.equal((await appIds(h)).length, 2, 'nothing started during the backoff');
  });

  it('refuses a handler with two actions: the event, the kill and PostStartHookError, never a silent skip', async () => {
    h.store.set(UID, hookedPod({ postStart: { exec: { command: ['true'] }, sleep: { seconds: 1 } } }));
    await assert.rejects(h.reconciler().reconcile(ref), (e) => isContainerStartError(e) && e.reason === 'PostStartHookError');
    assert.equal(h.runtime.callsTo('execSync').length, 0);
    assert.equal(appStatus(h)?.state?.waiting?.message, 'Cannot run handler: invalid handler: the handler names more than one action (exec, sleep)');
    assert.ok(h.events.reasons().includes('FailedPostStartHook'));
  });

  it('holds the start for a sleep hook on the clock', async () => {
    h.store.set(UID, hookedPod({ postStart: { sleep: { seconds: 3 } } }));
    const done = h.reconciler().reconcile(ref);
    await until('app started', () => callLog(h).includes('start:app'));
    await h.clock.advance(2999);
    assert.deepEqual(callLog(h), ['start:app'], 'the sidecar waits for the hook');
    await h.clock.advance(1);
    await done;
    assert.deepEqual(callLog(h), ['start:app', 'start:sidecar']);
    assert.ok(appStatus(h)?.state?.running !== undefined);
  });

  it('GETs an httpGet hook from a loopback server before the start completes, and fails the start when nothing listens', async () => {
    const paths: string[] = [];
    const server = http.createServer((req, res) => {
      paths.push(req.url ?? '');
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    try {
      h.store.set(UID, hookedPod({ postStart: { httpGet: { host: '127.0.0.1', port: 'hook', path: '/started' } } }, 30, (app) => (app.ports = [{ name: 'hook', containerPort: port }])));
      await h.reconciler().reconcile(ref);
      assert.deepEqual(paths, ['/started']);
      assert.ok(appStatus(h)?.state?.running !== undefined);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => { resolve(); }));
    }
    // The same pod again, now that nothing listens: the hook fails.
    const h2 = await createReconcilerHarness();
    try {
      h2.store.set(UID, hookedPod({ postStart: { httpGet: { host: '127.0.0.1', port, path: '/started' } } }));
      await assert.rejects(h2.reconciler().reconcile(ref), (e) => isContainerStartError(e) && e.reason === 'PostStartHookError');
      const message = h2.status.podStatus(UID)?.containerStatuses?.find((c) => c.name === 'app')?.state?.waiting?.message ?? '';
      assert.ok(message.startsWith(`HTTP lifecycle hook (/started) for Container "app" in Pod "web_default(uid-1)" failed - error: Get "http://127.0.0.1:${port}/started": `), message);
    } finally {
      await h2.cleanup();
    }
  });

  it('stops a running hook when the run is cancelled, and records, kills and fails nothing', async () => {
    const controller = new AbortController();
    let hookSignal: AbortSignal | undefined;
    h.runtime.execHandler = (_id, _cmd, call) => {
      hookSignal = call.signal;
      return new Promise<ExecSyncResult>(() => undefined);
    };
    h.store.set(UID, hookedPod({ postStart: { exec: { command: ['hang'] } } }));
    const done = h.reconciler().reconcile(ref, { signal: controller.signal });
    await until('the hook running', () => hookSignal !== undefined);
    controller.abort(new Error('lost the lock'));
    await assert.rejects(done, /lost the lock/);
    assert.equal(hookSignal?.aborted, true, 'the ExecSync call itself was cancelled');
    assert.deepEqual(h.events.reasons().filter((r) => r === 'FailedPostStartHook' || r === 'Killing'), []);
    assert.equal(h.runtime.callsTo('stopContainer').length, 0);
    assert.equal(h.sync().startFailures.size(), 0);
  });
});

describe('preStop hooks in the assembled reconciler', () => {
  let h: ReconcilerHarness;

  beforeEach(async () => {
    h = await createReconcilerHarness();
  });

  afterEach(async () => {
    await h.cleanup();
  });

  it('runs before StopContainer and takes its time off the grace period StopContainer gets', async () => {
    h.store.set(UID, hookedPod({ preStop: { sleep: { seconds: 5 } } }));
    await h.reconciler().reconcile(ref);
    await rememberNames(h);
    deleteWithGrace(h, 30);
    const done = h.reconciler().reconcile(ref);
    await until('the sidecar stopped', () => stopsOf(h, 'sidecar').length > 0);
    assert.deepEqual(stopsOf(h, 'sidecar'), [30], 'a container without a hook stops at once with the whole grace period');
    await h.clock.advance(4999);
    assert.deepEqual(stopsOf(h, 'app'), [], 'app is not stopped while its preStop sleeps');
    await h.clock.advance(1);
    await done;
    assert.deepEqual(stopsOf(h, 'app'), [25], '30 s minus the 5 s the hook took');
    assert.equal(h.store.get(UID), undefined, 'the pod finished terminating');
  });

  it('runs an exec hook with no ExecSync timeout, as the kubelet; a failure is a FailedPreStopHook event and the stop still happens', async () => {
    h.runtime.execHandler = (_id, cmd) => (cmd[0] === 'drain' ? exit(2, 'drain failed') : exit(0));
    h.store.set(UID, hookedPod({ preStop: { exec: { command: ['drain', '--now'] } } }, 20));
    await h.reconciler().reconcile(ref);
    await rememberNames(h);
    deleteWithGrace(h, 20);
    await h.reconciler().reconcile(ref);
    const log = callLog(h);
    assert.ok(log.indexOf('exec:drain') < log.indexOf('stop:app'), `the hook ran before the stop: ${log.join(' ')}`);
    assert.deepEqual(h.runtime.callsTo('execSync').map((c) => c.args.slice(1, 3)), [[['drain', '--now'], 0]]);
    assert.deepEqual(h.events.events.filter((e) => e.reason === 'FailedPreStopHook').map((e) => [e.type, e.message, e.fieldPath]), [['Warning', 'PreStopHook failed', 'spec.containers{app}']]);
    assert.deepEqual(stopsOf(h, 'app'), [20]);
    assert.deepEqual((await appIds(h)).length, 0, 'the pod was removed from the runtime');
    assert.equal(h.store.get(UID), undefined);
  });

  it('abandons an exec hook that outlives the grace period without cancelling it (it ends with its container, as under the kubelet), and stops the container with the 2 s minimum', async () => {
    let hookSignal: AbortSignal | undefined;
    let hookStarted = false;
    h.runtime.execHandler = (_id, _cmd, call) => {
      hookStarted = true;
      hookSignal = call.signal;
      return new Promise<ExecSyncResult>(() => undefined);
    };
    h.store.set(UID, hookedPod({ preStop: { exec: { command: ['hang'] } } }, 5));
    await h.reconciler().reconcile(ref);
    await rememberNames(h);
    deleteWithGrace(h, 5);
    const done = h.reconciler().reconcile(ref);
    await until('the hook running', () => hookStarted);
    await h.clock.advance(4999);
    assert.deepEqual(stopsOf(h, 'app'), []);
    assert.equal(hookSignal?.aborted ?? false, false);
    await h.clock.advance(1);
    await done;
    assert.equal(hookSignal?.aborted ?? false, false, 'the abandoned ExecSync call runs on until the container stops');
    assert.deepEqual(stopsOf(h, 'app'), [2]);
    assert.deepEqual(h.events.reasons().filter((r) => r === 'FailedPreStopHook'), [], 'running out of time is not a hook failure');
    assert.equal(h.store.get(UID), undefined);
  });

  it('bounds a hanging hook of a force-deleted pod (its final object carried grace 0) by the kubelet\u2019s 1 s, not the 5 s recorded on its container', async () => {
    let hookStarted = false;
    h.runtime.execHandler = () => {
      hookStarted = true;
      return new Promise<ExecSyncResult>(() => undefined);
    };
    h.store.set(UID, hookedPod({ preStop: { exec: { command: ['hang'] } } }, 5));
    await h.reconciler().reconcile(ref);
    await rememberNames(h);
    // `kubectl delete --grace-period=0 --force`: the object is gone, its last version said 0.
    h.store.delete(UID);
    h.finalDeletionGraces.set(UID, 0);
    const done = h.reconciler().reconcile(ref);
    await until('the hook running', () => hookStarted);
    await h.clock.advance(999);
    assert.deepEqual(stopsOf(h, 'app'), [], 'still within the 1 s');
    await h.clock.advance(1);
    await until('app stopped at 1 s', () => stopsOf(h, 'app').length > 0);
    await done;
    assert.deepEqual(stopsOf(h, 'app'), [2], 'abandoned at 1 s: the 2 s minimum window');
    assert.deepEqual((await appIds(h)).length, 0, 'the pod was removed from the runtime');
  });

  it('abandons the hook sooner when a shorter grace period arrives while it runs', async () => {
    h.store.set(UID, hookedPod({ preStop: { sleep: { seconds: 25 } } }));
    await h.reconciler().reconcile(ref);
    await rememberNames(h);
    deleteWithGrace(h, 30);
    const done = h.reconciler().reconcile(ref);
    await until('the sidecar stopped', () => stopsOf(h, 'sidecar').length > 0);
    await h.clock.advance(1000);
    deleteWithGrace(h, 4);
    await h.clock.advance(2500);
    assert.deepEqual(stopsOf(h, 'app'), [], 'still within the new 4 s');
    await h.clock.advance(1000);
    await done;
    assert.equal(stopsOf(h, 'app')[0], 2, 'abandoned at 4 s: 4 - 4 → the 2 s minimum');
  });

  it('runs when a container is killed to be restarted too (a liveness-style kill through the plan)', async () => {
    h.runtime.execHandler = () => exit(0);
    h.store.set(UID, hookedPod({ preStop: { exec: { command: ['bye'] } } }));
    await h.reconciler().reconcile(ref);
    // A changed spec makes the plan kill and restart app.
    const pod = h.store.get(UID)!;
    h.store.set(UID, { ...pod, spec: { ...pod.spec!, containers: [{ ...pod.spec!.containers[0]!, image: 'busybox:1.36' }, pod.spec!.containers[1]!] } });
    h.runtime.addImage('docker.io/library/busybox:1.36');
    await h.reconciler().reconcile(ref);
    assert.deepEqual(callLog(h).slice(2), ['exec:bye', 'stop:app', 'start:app']);
  });
});
