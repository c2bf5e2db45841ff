/**
 * End to end: the pod lifecycle as the kubelet runs it — restarts and backoff, init and sidecar
 * containers, graceful termination, deadlines, termination messages — asserted on the API (status,
 * events) and on the runtime.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { NODE_NAME, apply, createNamespace, deleteNamespace, eventually, getPod, kubectl, podEvents, requireCluster, waitForPhase } from './helpers.js';

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
  });

  it('runs init containers one at a time, in order, before the app container', async () => {
    await apply(pod(ns, 'inits', {
      init: [
        { name: 'first', script: 'sleep 2; date +%s%N > /data/first', extra: { volumeMounts: [{ name: 'data', mountPath: '/data' }] } },
        { name: 'second', script: 'test -f /data/first && date +%s%N > /data/second', extra: { volumeMounts: [{ name: 'data', mountPath: '/data' }] } },
      ],
      containers: [{ name: 'app', script: 'test -f /data/second && sleep 3600', extra: { volumeMounts: [{ name: 'data', mountPath: '/data' }] } }],
      podSpec: { volumes: [{ name: 'data', emptyDir: {} }] },
    }));
    const pending = await waitFor([ns, 'inits'], 'initializing', (x) => x.status?.initContainerStatuses?.[0]?.state?.running !== undefined || x.status?.initContainerStatuses?.[0]?.state?.waiting !== undefined);
    assert.equal(pending.status?.phase, 'Pending');
    assert.equal(pending.status?.conditions?.find((c) => c.type === 'Initialized')?.status, 'False');
    assert.equal(pending.status?.containerStatuses?.[0]?.state?.waiting?.reason, 'PodInitializing');
    const running = await waitForPhase(ns, 'inits', 'Running');
    assert.deepEqual(running.status?.initContainerStatuses?.map((s) => s.state?.terminated?.reason), ['Completed', 'Completed']);
    assert.equal(running.status?.conditions?.find((c) => c.type === 'Initialized')?.status, 'True');
    assert.equal(running.status?.containerStatuses?.[0]?.restartCount, 0);
  });

  it('fails the pod when an init container fails under restartPolicy Never, never starting the app', async () => {
    await apply(pod(ns, 'init-fails', { restartPolicy: 'Never', init: [{ name: 'setup', script: 'exit 7' }], containers: [{ name: 'app', script: 'sleep 3600' }] }));
    const p = await waitForPhase(ns, 'init-fails', 'Failed');
    assert.equal(p.status?.initContainerStatuses?.[0]?.state?.terminated?.exitCode, 7);
    assert.equal(p.status?.containerStatuses?.[0]?.state?.running, undefined);
  });

  it('shows Init:CrashLoopBackOff for a failing init container under restartPolicy Always', async () => {
    await apply(pod(ns, 'init-loops', { init: [{ name: 'setup', script: 'exit 1' }], containers: [{ name: 'app', script: 'sleep 3600' }] }));
    const p = await waitFor([ns, 'init-loops'], 'init CrashLoopBackOff', (x) => x.status?.initContainerStatuses?.[0]?.state?.waiting?.reason === 'CrashLoopBackOff', 120_000);
    assert.equal(p.status?.phase, 'Pending');
    const out = await kubectl(['get', 'pod', '-n', ns, 'init-loops', '--no-headers']);
    assert.match(out, /Init:CrashLoopBackOff/);
  });

  it('starts a sidecar before the app, keeps it running beside it, and stops it after the app', async () => {
    await apply(pod(ns, 'sidecar', {
      init: [{ name: 'proxy', restartPolicy: 'Always', script: 'trap "exit 0" TERM; date +%s > /data/proxy-started; while true; do sleep 1; done', extra: { volumeMounts: [{ name: 'data', mountPath: '/data' }] } }],
      containers: [{ name: 'app', script: 'test -f /data/proxy-started || exit 1; trap "sleep 3; exit 0" TERM; while true; do sleep 1; done', extra: { volumeMounts: [{ name: 'data', mountPath: '/data' }] } }],
      podSpec: { volumes: [{ name: 'data', emptyDir: {} }], terminationGracePeriodSeconds: 20 },
    }));
    const p = await waitFor([ns, 'sidecar'], 'app and sidecar ready', (x) => x.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True');
    assert.equal(p.status?.initContainerStatuses?.[0]?.started, true);
    assert.equal(p.status?.containerStatuses?.[0]?.restartCount, 0);
    await kubectl(['delete', 'pod', '-n', ns, 'sidecar', '--timeout=60s']);
    const killing = (await podEvents(ns, 'sidecar')).filter((e) => e.reason === 'Killing');
    const at = (name: string): number => new Date(killing.find((e) => e.involvedObject.fieldPath?.includes(`{${name}}`) === true)?.firstTimestamp ?? 0).getTime();
    assert.ok(at('app') > 0 && at('proxy') > 0, `Killing events: ${killing.map((e) => e.message).join('; ')}`);
    assert.ok(at('proxy') - at('app') >= 2000, `sidecar stopped ${at('proxy') - at('app')} ms after the app`);
  });

  it('lets a later, shorter grace period cut a termination short', async () => {
    await apply(pod(ns, 'stubborn', { containers: [{ name: 'main', script: 'trap "" TERM; while true; do sleep 1; done' }], podSpec: { terminationGracePeriodSeconds: 120 } }));
    await waitForPhase(ns, 'stubborn', 'Running');
    const started = Date.now();
    await kubectl(['delete', 'pod', '-n', ns, 'stubborn', '--wait=false']);
    await new Promise((r) => setTimeout(r, 2000));
    await kubectl(['delete', 'pod', '-n', ns, 'stubborn', '--grace-period=3', '--wait=false']);
    await eventually('stubborn pod gone', async () => ((await getPod(ns, 'stubborn')) === undefined ? true : undefined), 60_000);
    assert.ok(Date.now() - started < 60_000, 'gone well before its first 120 s grace period');
  });

  it('fails a pod that outlives its activeDeadlineSeconds with DeadlineExceeded', async () => {
    await apply(pod(ns, 'deadline', { containers: [{ name: 'main', script: 'sleep 3600' }], podSpec: { activeDeadlineSeconds: 5 } }));
    const p = await waitForPhase(ns, 'deadline', 'Failed', 90_000);
    assert.equal(p.status?.reason, 'DeadlineExceeded');
    assert.equal(p.status?.containerStatuses?.[0]?.state?.running, undefined);
    assert.ok((await podEvents(ns, 'deadline')).some((e) => e.reason === 'DeadlineExceeded'));
  });

  it('reports the termination message file, and the log tail with FallbackToLogsOnError', async () => {
    await apply(pod(ns, 'message', { restartPolicy: 'Never', containers: [{ name: 'main', script: 'echo -n "all done" > /dev/termination-log' }] }));
    await apply(pod(ns, 'fallback', { restartPolicy: 'Never', containers: [{ name: 'main', script: 'echo "fatal: config missing"; exit 2', extra: { terminationMessagePolicy: 'FallbackToLogsOnError' } }] }));
    const message = await waitForPhase(ns, 'message', 'Succeeded');
    assert.equal(message.status?.containerStatuses?.[0]?.state?.terminated?.message, 'all done');
    const fallback = await waitForPhase(ns, 'fallback', 'Failed');
    assert.equal(fallback.status?.containerStatuses?.[0]?.state?.terminated?.message?.trim(), 'fatal: config missing');
  });

  it('reports OOMKilled for a container that exceeds its memory limit', async () => {
    await apply(pod(ns, 'oom', {
      restartPolicy: 'Never',
      containers: [{ name: 'main', script: 'tail /dev/zero', extra: { resources: { limits: { memory: '32Mi' } } } }],
    }));
    const p = await waitForPhase(ns, 'oom', 'Failed', 90_000);
    assert.equal(p.status?.containerStatuses?.[0]?.state?.terminated?.reason, 'OOMKilled');
    assert.equal(p.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 137);
  });
});
