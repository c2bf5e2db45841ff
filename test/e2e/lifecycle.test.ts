/**
 * End to end: the pod lifecycle as the kubelet runs it — restarts and backoff, init and sidecar
 * containers, graceful termination, deadlines, termination messages — asserted on the API (status,
 * events) and on the runtime.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import {
  NODE_NAME,
  afterContainerGc,
  apply,
  containerStatusOf,
  crashedInstances,
  describeContainer,
  createNamespace,
  deleteNamespace,
  eventually,
  expectRuntime,
  getPod,
  kubectl,
  msBetween,
  podEvents,
  podWithRuntime,
  pollUntil,
  requireCluster,
  runtimeContainers,
  runtimePicture,
  waitForPhase,
  stoppedAfterMs,
  watchStops,
  type RuntimeContainer,
  type StopObservation,
} from './helpers.js';

interface ContainerSpec {
  name: string;
  script: string;
  restartPolicy?: 'Always';
  extra?: Record<string, unknown>;
}

function pod(namespace: string, name: string, spec: { containers: ContainerSpec[]; init?: ContainerSpec[]; restartPolicy?: string; podSpec?: Record<string, unknown> }): object {
  const container = (c: ContainerSpec): object => ({
    name: c.name,
    image: 'busybox:1.35',
    command: ['sh', '-c', c.script],
    ...(c.restartPolicy === undefined ? {} : { restartPolicy: c.restartPolicy }),
    ...(c.extra ?? {}),
  });
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName: NODE_NAME,
      restartPolicy: spec.restartPolicy ?? 'Always',
      terminationGracePeriodSeconds: 5,
      ...(spec.init === undefined ? {} : { initContainers: spec.init.map(container) }),
      containers: spec.containers.map(container),
      ...(spec.podSpec ?? {}),
    },
  };
}

async function waitFor([namespace, name]: [string, string], what: string, test: (p: V1Pod) => boolean, timeoutMs?: number): Promise<V1Pod> {
  return eventually(`${namespace}/${name}: ${what}`, async () => {
    const p = await getPod(namespace, name);
    return p !== undefined && test(p) ? p : undefined;
  }, timeoutMs);
}

describe('the pod lifecycle on nodelet', () => {
  let ns = '';

  before(async () => {
    requireCluster();
    ns = await createNamespace('e2e-lifecycle');
  });

  after(async () => {
    if (ns !== '') await deleteNamespace(ns);
  });

  it('holds a crashing container in CrashLoopBackOff, counts restarts, and aggregates its BackOff events', async () => {
    await apply(pod(ns, 'crasher', { containers: [{ name: 'main', script: 'echo crashing; exit 1' }] }));
    const p = await waitFor([ns, 'crasher'], 'CrashLoopBackOff', (x) => x.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CrashLoopBackOff', 120_000);
    const status = p.status?.containerStatuses?.[0];
    assert.ok((status?.restartCount ?? 0) >= 1);
    assert.equal(status?.lastState?.terminated?.exitCode, 1);
    assert.equal(status?.lastState?.terminated?.reason, 'Error');
    assert.match(status?.state?.waiting?.message ?? '', /^back-off \d+s restarting failed container=main pod=crasher_/);
    assert.equal(p.status?.phase, 'Running');
    const backOff = await eventually('BackOff event counted twice', async () => {
      const e = (await podEvents(ns, 'crasher')).find((x) => x.reason === 'BackOff');
      return (e?.count ?? 0) >= 2 ? e : undefined;
    }, 120_000);
    assert.equal(backOff.type, 'Warning');
    // The runtime: one sandbox, and one exited instance per run the status counts (attempts
    // 0..restartCount, each exit 1), nothing more; but for the newest, container GC may have
    // removed them (see test/e2e/garbage-collection.test.ts).
    const settled = await podWithRuntime([ns, 'crasher'], { name: 'main' }, (x) => containerStatusOf(x, 'main')?.state?.waiting?.reason === 'CrashLoopBackOff');
    const expected = crashedInstances('main', containerStatusOf(settled.pod, 'main'), 1);
    assert.deepEqual({ ...settled.picture, containers: afterContainerGc(settled.picture.containers) }, { sandboxes: ['sandbox#0:READY'], containers: afterContainerGc(expected) });
  });

  it('restarts an OnFailure container after a failure and lets the pod succeed', async () => {
    await apply(pod(ns, 'retry', {
      restartPolicy: 'OnFailure',
      containers: [{ name: 'main', script: 'if [ -f /data/ran ]; then exit 0; fi; touch /data/ran; exit 1', extra: { volumeMounts: [{ name: 'data', mountPath: '/data' }] } }],
      podSpec: { volumes: [{ name: 'data', emptyDir: {} }] },
    }));
    const p = await waitForPhase(ns, 'retry', 'Succeeded', 120_000);
    assert.equal(p.status?.containerStatuses?.[0]?.restartCount, 1);
    assert.equal(p.status?.containerStatuses?.[0]?.state?.terminated?.reason, 'Completed');
    await expectRuntime(p.metadata?.uid ?? '', { sandboxes: ['sandbox#0:NOTREADY'], containers: ['main#0:EXITED(1)', 'main#1:EXITED(0)'] }, 30_000, { afterContainerGc: true });
  });

  it('runs init containers one at a time, in order, each once, before the app container', async () => {
    // No file handshake between them: an init container started early would simply succeed, so
    // only the runtime's own start and finish times of every instance can tell the order.
    await apply(pod(ns, 'inits', {
      init: [
        { name: 'first', script: 'sleep 2' },
        { name: 'second', script: 'sleep 1' },
      ],
      containers: [{ name: 'app', script: 'sleep 3600' }],
    }));
    const pending = await waitFor([ns, 'inits'], 'initializing', (x) => x.status?.initContainerStatuses?.[0]?.state?.running !== undefined || x.status?.initContainerStatuses?.[0]?.state?.waiting !== undefined);
    assert.equal(pending.status?.phase, 'Pending');
    assert.equal(pending.status?.conditions?.find((c) => c.type === 'Initialized')?.status, 'False');
    assert.equal(pending.status?.containerStatuses?.[0]?.state?.waiting?.reason, 'PodInitializing');
    const running = await waitForPhase(ns, 'inits', 'Running');
    assert.deepEqual(running.status?.initContainerStatuses?.map((s) => s.state?.terminated?.reason), ['Completed', 'Completed']);
    assert.equal(running.status?.conditions?.find((c) => c.type === 'Initialized')?.status, 'True');
    assert.equal(running.status?.containerStatuses?.[0]?.restartCount, 0);
    const uid = running.metadata?.uid ?? '';
    // Each ran exactly once: one instance each, all in one sandbox.
    assert.deepEqual(await runtimePicture(uid), { sandboxes: ['sandbox#0:READY'], containers: ['app#0:RUNNING', 'first#0:EXITED(0)', 'second#0:EXITED(0)'] });
    const [app, first, second] = await runtimeContainers(uid) as [RuntimeContainer, RuntimeContainer, RuntimeContainer];
    assert.ok(first.finishedNs > 0n && first.finishedNs < second.startedNs, `second started ${msBetween(first.finishedNs, second.startedNs)} ms after first finished`);
    assert.ok(second.finishedNs > 0n && second.finishedNs < app.startedNs, `app started ${msBetween(second.finishedNs, app.startedNs)} ms after second finished`);
    console.log(`init order: second started ${msBetween(first.finishedNs, second.startedNs).toFixed(0)} ms after first finished; app ${msBetween(second.finishedNs, app.startedNs).toFixed(0)} ms after second finished`);
  });

  it('fails the pod when an init container fails under restartPolicy Never, never starting the app', async () => {
    await apply(pod(ns, 'init-fails', { restartPolicy: 'Never', init: [{ name: 'setup', script: 'exit 7' }], containers: [{ name: 'app', script: 'sleep 3600' }] }));
    const p = await waitForPhase(ns, 'init-fails', 'Failed');
    assert.equal(p.status?.initContainerStatuses?.[0]?.state?.terminated?.exitCode, 7);
    assert.equal(p.status?.containerStatuses?.[0]?.state?.running, undefined);
    // The app container was never even created.
    await expectRuntime(p.metadata?.uid ?? '', { sandboxes: ['sandbox#0:NOTREADY'], containers: ['setup#0:EXITED(7)'] });
  });

  it('shows Init:CrashLoopBackOff for a failing init container under restartPolicy Always', async () => {
    await apply(pod(ns, 'init-loops', { init: [{ name: 'setup', script: 'exit 1' }], containers: [{ name: 'app', script: 'sleep 3600' }] }));
    const p = await waitFor([ns, 'init-loops'], 'init CrashLoopBackOff', (x) => x.status?.initContainerStatuses?.[0]?.state?.waiting?.reason === 'CrashLoopBackOff', 120_000);
    assert.equal(p.status?.phase, 'Pending');
    const out = await kubectl(['get', 'pod', '-n', ns, 'init-loops', '--no-headers']);
    assert.match(out, /Init:CrashLoopBackOff/);
    // The runtime: every run of the init container, and no app container at all.
    const settled = await podWithRuntime([ns, 'init-loops'], { name: 'setup', init: true }, (x) => containerStatusOf(x, 'setup', true)?.state?.waiting?.reason === 'CrashLoopBackOff');
    const expected = crashedInstances('setup', containerStatusOf(settled.pod, 'setup', true), 1);
    assert.deepEqual({ ...settled.picture, containers: afterContainerGc(settled.picture.containers) }, { sandboxes: ['sandbox#0:READY'], containers: afterContainerGc(expected) });
  });

  it('starts sidecars in order before the app; stops the app first, then the sidecars in reverse order', async () => {
    // Each container exits 0 on TERM after a pause, so every stop is seen in the runtime while the
    // pod is Terminating. proxy-b (stopped first of the sidecars) pauses longer than proxy-a: had
    // both been stopped at once, proxy-a would finish first.
    const stopsAfter = (seconds: number): string => `trap "sleep ${seconds}; exit 0" TERM; while true; do sleep 1; done`;
    await apply(pod(ns, 'sidecars', {
      init: [
        { name: 'proxy-a', restartPolicy: 'Always', script: stopsAfter(1) },
        { name: 'proxy-b', restartPolicy: 'Always', script: stopsAfter(2) },
      ],
      containers: [{ name: 'app', script: stopsAfter(2) }],
      podSpec: { terminationGracePeriodSeconds: 30 },
    }));
    const ready = await waitFor([ns, 'sidecars'], 'app and sidecars ready', (x) => x.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True');
    assert.deepEqual(ready.status?.initContainerStatuses?.map((s) => [s.name, s.started]), [['proxy-a', true], ['proxy-b', true]]);
    assert.equal(containerStatusOf(ready, 'app')?.restartCount, 0);
    const uid = ready.metadata?.uid ?? '';
    assert.deepEqual(await runtimePicture(uid), { sandboxes: ['sandbox#0:READY'], containers: ['app#0:RUNNING', 'proxy-a#0:RUNNING', 'proxy-b#0:RUNNING'] });
    const [app, proxyA, proxyB] = await runtimeContainers(uid) as [RuntimeContainer, RuntimeContainer, RuntimeContainer];
    assert.ok(proxyA.startedNs < proxyB.startedNs && proxyB.startedNs < app.startedNs, `started: proxy-a ${proxyA.startedNs}, proxy-b ${proxyB.startedNs}, app ${app.startedNs}`);

    await kubectl(['delete', 'pod', '-n', ns, 'sidecars', '--wait=false']);
    // Each exit as the runtime records it, read while the pod terminates (the agent removes the
    // containers right after the last exit, so the last one may only be seen still running).
    const stops = await watchStops(uid, [app.id, proxyA.id, proxyB.id]);
    const [appStop, aStop, bStop] = (['app', 'proxy-a', 'proxy-b'] as const).map((n) => stops.get(n)!) as [StopObservation, StopObservation, StopObservation];
    const seen = JSON.stringify([...stops.values()].map((o) => ({ name: o.name, exit: o.exit === undefined ? 'unread' : `${describeContainer(o.exit)} at ${o.exit.finishedNs}`, lastRunning: `${o.lastRunningNs}` })));
    const bAfterApp = stoppedAfterMs(appStop, bStop);
    const aAfterB = stoppedAfterMs(bStop, aStop);
    assert.ok(bAfterApp !== undefined && bAfterApp.ms > 0, `proxy-b stopped after the app: ${seen}`);
    assert.ok(aAfterB !== undefined && aAfterB.ms > 0, `proxy-a stopped after proxy-b: ${seen}`);
    for (const o of [appStop, aStop, bStop]) if (o.exit !== undefined) assert.equal(o.exit.exitCode, 0, `${o.name} stopped by its own TERM handler: ${seen}`);
    console.log(`sidecar stop order: app, then proxy-b ${bAfterApp.ms.toFixed(0)} ms later, then proxy-a ${aAfterB.bound ? 'still running ' : ''}${aAfterB.ms.toFixed(0)} ms after proxy-b${aAfterB.bound ? ' (its exit was removed before it could be read)' : ''}`);
    const killing = (await podEvents(ns, 'sidecars')).filter((e) => e.reason === 'Killing').map((e) => e.involvedObject.fieldPath).sort();
    assert.deepEqual(killing, ['spec.containers{app}', 'spec.initContainers{proxy-a}', 'spec.initContainers{proxy-b}']);
    await pollUntil('the pod to be gone', async () => ((await getPod(ns, 'sidecars')) === undefined ? true : undefined), { timeoutMs: 60_000 });
    await expectRuntime(uid, { sandboxes: [], containers: [] });
  });

  it('completes a restartPolicy Never pod with a sidecar once its app container succeeds: Succeeded, Initialized, the sidecar stopped', async () => {
    // The sidecar ignores nothing: it exits on SIGTERM. Before the fix the pod went back to Pending
    // once its sandbox was down (the init containers looked "to run again"), and stayed there.
    await apply(pod(ns, 'sidecar-done', {
      restartPolicy: 'Never',
      init: [{ name: 'proxy', restartPolicy: 'Always', script: 'trap "exit 0" TERM; while true; do sleep 1; done' }],
      containers: [{ name: 'app', script: 'sleep 2; exit 0' }],
    }));
    const p = await waitForPhase(ns, 'sidecar-done', 'Succeeded', 90_000);
    const initialized = p.status?.conditions?.find((c) => c.type === 'Initialized');
    assert.deepEqual([initialized?.status, initialized?.reason], ['True', 'PodCompleted']);
    assert.equal(p.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 0);
    assert.ok(p.status?.initContainerStatuses?.[0]?.state?.terminated !== undefined, 'the sidecar is reported terminated');
    // The runtime: one sandbox, down; each container ran once and exited; no second sandbox.
    await expectRuntime(p.metadata?.uid ?? '', { sandboxes: ['sandbox#0:NOTREADY'], containers: ['app#0:EXITED(0)', 'proxy#0:EXITED(0)'] }, 30_000);
    // And it stays Succeeded (a terminal phase is never left).
    await new Promise((resolve) => setTimeout(resolve, 3000));
    assert.equal((await getPod(ns, 'sidecar-done'))?.status?.phase, 'Succeeded');
  });

  it('fails a restartPolicy Never pod whose init container after a sidecar fails: Failed, the sidecar stopped, the app never started', async () => {
    // Before the fix the pod stayed Pending: once its sandbox was down the stopped sidecar hid the failure.
    await apply(pod(ns, 'sidecar-init-fails', {
      restartPolicy: 'Never',
      init: [{ name: 'proxy', restartPolicy: 'Always', script: 'trap "exit 1" TERM; while true; do sleep 1; done' }, { name: 'setup', script: 'sleep 1; exit 3' }],
      containers: [{ name: 'app', script: 'sleep 3600' }],
    }));
    const p = await waitForPhase(ns, 'sidecar-init-fails', 'Failed', 90_000);
    assert.equal(containerStatusOf(p, 'setup', true)?.state?.terminated?.exitCode, 3);
    assert.equal(containerStatusOf(p, 'app')?.state?.running, undefined);
    await expectRuntime(p.metadata?.uid ?? '', { sandboxes: ['sandbox#0:NOTREADY'], containers: ['proxy#0:EXITED(1)', 'setup#0:EXITED(3)'] }, 30_000);
  });

  it('lets a later, shorter grace period cut a termination short', async () => {
    await apply(pod(ns, 'stubborn', { containers: [{ name: 'main', script: 'trap "" TERM; while true; do sleep 1; done' }], podSpec: { terminationGracePeriodSeconds: 120 } }));
    const uid = (await waitForPhase(ns, 'stubborn', 'Running')).metadata?.uid ?? '';
    assert.deepEqual(await runtimePicture(uid), { sandboxes: ['sandbox#0:READY'], containers: ['main#0:RUNNING'] });
    const firstDeleteAt = Date.now();
    await kubectl(['delete', 'pod', '-n', ns, 'stubborn', '--wait=false']);
    const firstGrace = (await getPod(ns, 'stubborn'))?.metadata?.deletionGracePeriodSeconds;
    assert.equal(firstGrace, 120);
    await new Promise((r) => setTimeout(r, 2000));
    // Still running 2 s into its 120 s: only the shorter grace period can end it early.
    assert.deepEqual(await runtimePicture(uid), { sandboxes: ['sandbox#0:READY'], containers: ['main#0:RUNNING'] });
    const shrunkAt = Date.now();
    await kubectl(['delete', 'pod', '-n', ns, 'stubborn', '--grace-period=3', '--wait=false']);
    // The API keeps the shorter period (it may already show less: it counts down from the first delete).
    const shrunk = (await getPod(ns, 'stubborn'))?.metadata?.deletionGracePeriodSeconds;
    assert.ok(shrunk !== undefined && shrunk <= 3, `the API took the shorter grace period: ${String(shrunk)}`);
    // getPod is undefined only when the API answers NotFound; any other error fails here at once.
    await pollUntil('stubborn pod gone', async () => ((await getPod(ns, 'stubborn')) === undefined ? true : undefined), { timeoutMs: 60_000 });
    const goneAt = Date.now();
    console.log(`grace shrink: pod gone ${((goneAt - shrunkAt) / 1000).toFixed(1)}s after --grace-period=3 (${((goneAt - firstDeleteAt) / 1000).toFixed(1)}s after the first delete, which gave ${firstGrace} s)`);
    assert.ok(goneAt - firstDeleteAt < 60_000, 'gone well before its first 120 s grace period');
    // As the kubelet's: the shorter grace period runs from the shrink, with at least its 2 s window
    // (the kubelet kills again with StopContainer(max(2, grace))); not at once because that many
    // seconds have passed since the first delete.
    const window = Math.max(2, shrunk) * 1000;
    assert.ok(goneAt - shrunkAt >= window, `gone ${goneAt - shrunkAt} ms after the shrink, before its ${window} ms had passed`);
    await expectRuntime(uid, { sandboxes: [], containers: [] });
  });

  it('kills a force-deleted pod that ignores SIGTERM within the kubelet’s 2 s window, not its 120 s grace period', async () => {
    await apply(pod(ns, 'forced', { containers: [{ name: 'main', script: 'trap "" TERM; while true; do sleep 1; done' }], podSpec: { terminationGracePeriodSeconds: 120 } }));
    const uid = (await waitForPhase(ns, 'forced', 'Running')).metadata?.uid ?? '';
    assert.deepEqual(await runtimePicture(uid), { sandboxes: ['sandbox#0:READY'], containers: ['main#0:RUNNING'] });
    const deletedAt = Date.now();
    // The API server writes deletionGracePeriodSeconds 0, then removes the pod: a reconcile may see only the removal.
    await kubectl(['delete', 'pod', '-n', ns, 'forced', '--grace-period=0', '--force', '--wait=false']);
    await expectRuntime(uid, { sandboxes: [], containers: [] }, 30_000);
    console.log(`force-deleted pod ignoring SIGTERM (grace 120 s): nothing of it in the runtime ${((Date.now() - deletedAt) / 1000).toFixed(1)}s after the delete`);
  });

  it('fails a pod that outlives its activeDeadlineSeconds with DeadlineExceeded', async () => {
    await apply(pod(ns, 'deadline', { containers: [{ name: 'main', script: 'sleep 3600' }], podSpec: { activeDeadlineSeconds: 5 } }));
    const p = await waitForPhase(ns, 'deadline', 'Failed', 90_000);
    assert.equal(p.status?.reason, 'DeadlineExceeded');
    assert.equal(p.status?.containerStatuses?.[0]?.state?.running, undefined);
    assert.ok((await podEvents(ns, 'deadline')).some((e) => e.reason === 'DeadlineExceeded'));
    // sleep as PID 1 ignores TERM: killed at the end of the 5 s grace period.
    await expectRuntime(p.metadata?.uid ?? '', { sandboxes: ['sandbox#0:NOTREADY'], containers: ['main#0:EXITED(137)'] });
  });

  it('reports the termination message file, and the log tail with FallbackToLogsOnError', async () => {
    await apply(pod(ns, 'message', { restartPolicy: 'Never', containers: [{ name: 'main', script: 'echo -n "all done" > /dev/termination-log' }] }));
    await apply(pod(ns, 'fallback', { restartPolicy: 'Never', containers: [{ name: 'main', script: 'echo "fatal: config missing"; exit 2', extra: { terminationMessagePolicy: 'FallbackToLogsOnError' } }] }));
    const message = await waitForPhase(ns, 'message', 'Succeeded');
    assert.equal(message.status?.containerStatuses?.[0]?.state?.terminated?.message, 'all done');
    const fallback = await waitForPhase(ns, 'fallback', 'Failed');
    assert.equal(fallback.status?.containerStatuses?.[0]?.state?.terminated?.message?.trim(), 'fatal: config missing');
    await expectRuntime(message.metadata?.uid ?? '', { sandboxes: ['sandbox#0:NOTREADY'], containers: ['main#0:EXITED(0)'] });
    await expectRuntime(fallback.metadata?.uid ?? '', { sandboxes: ['sandbox#0:NOTREADY'], containers: ['main#0:EXITED(2)'] });
  });

  it('reports OOMKilled for a container that exceeds its memory limit', async () => {
    await apply(pod(ns, 'oom', {
      restartPolicy: 'Never',
      containers: [{ name: 'main', script: 'tail /dev/zero', extra: { resources: { limits: { memory: '32Mi' } } } }],
    }));
    const p = await waitForPhase(ns, 'oom', 'Failed', 90_000);
    assert.equal(p.status?.containerStatuses?.[0]?.state?.terminated?.reason, 'OOMKilled');
    assert.equal(p.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 137);
    await expectRuntime(p.metadata?.uid ?? '', { sandboxes: ['sandbox#0:NOTREADY'], containers: ['main#0:EXITED(137)'] });
    assert.deepEqual((await runtimeContainers(p.metadata?.uid ?? '')).map((c) => c.reason), ['OOMKilled']);
  });
});
