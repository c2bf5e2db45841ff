/**
 * End to end: container lifecycle hooks (`postStart`, `preStop`) as the kubelet runs them, on the
 * test cluster — asserted on the API (status, restart counts, events), on the runtime (crictl) and,
 * for preStop, on files the containers write into a hostPath directory this test created (the test
 * runs as root on the node), whose modification times order what happened.
 *
 * The httpGet hook targets an httpd in a sidecar of the same pod (gated by a startup probe), not
 * in the hooked container itself: the hook runs right after StartContainer, before a server in
 * that container can be relied on to listen (kubernetes/website#54086 documents that race).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { KubeConfig, Watch, type V1Container, type V1Pod } from '@kubernetes/client-node';
import { NODE_NAME, apply, createNamespace, crictl, deleteNamespace, eventually, getPod, kubectl, podEvents, requireCluster, runtimeContainers } from './helpers.js';

/** StartedAt of a container instance from `crictl inspect`, in epoch milliseconds. */
async function startedAtMs(id: string): Promise<number> {
  const out = JSON.parse(await crictl(['inspect', id])) as { status: { startedAt: string } };
  return Date.parse(out.status.startedAt);
}

/** What a container wrote to stdout and stderr, through the runtime (`crictl logs`). */
async function containerLog(uid: string, name: string): Promise<string> {
  const id = (await runtimeContainers(uid)).find((c) => c.name === name)?.id ?? '';
  const { stdout, stderr } = await promisify(execFile)('crictl', ['logs', id], { timeout: 30_000 });
  return stdout + stderr;
}

/**
 * Every waiting state of the pod's `app` container the API server reports from now on (a watch):
 * a PostStartHookError lasts only until the next sync (then CrashLoopBackOff), too briefly to be
 * caught by polling, but every status nodelet writes reaches the watch.
 */
async function watchWaiting(namespace: string, name: string): Promise<{ readonly seen: { reason: string; message: string }[]; stop(): void }> {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  const seen: { reason: string; message: string }[] = [];
  const controller = await new Watch(kubeConfig).watch(
    `/api/v1/namespaces/${namespace}/pods`,
    { fieldSelector: `metadata.name=${name}` },
    (_type: string, pod: V1Pod) => {
      const waiting = statusOf(pod, 'app')?.state?.waiting;
      if (waiting?.reason !== undefined) seen.push({ reason: waiting.reason, message: waiting.message ?? '' });
    },
    () => undefined,
  );
  return { seen, stop: () => { controller.abort(); } };
}

function podOf(namespace: string, name: string, spec: { containers: Partial<V1Container>[]; initContainers?: Partial<V1Container>[]; grace?: number; volumes?: object[] }): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName: NODE_NAME,
      terminationGracePeriodSeconds: spec.grace ?? 2,
      ...(spec.initContainers === undefined ? {} : { initContainers: spec.initContainers.map((c) => ({ image: 'busybox:1.35', ...c })) }),
      containers: spec.containers.map((c) => ({ image: 'busybox:1.35', ...c })),
      ...(spec.volumes === undefined ? {} : { volumes: spec.volumes }),
    },
  };
}

function statusOf(pod: V1Pod | undefined, name: string): NonNullable<NonNullable<V1Pod['status']>['containerStatuses']>[number] | undefined {
  return pod?.status?.containerStatuses?.find((c) => c.name === name);
}

async function waitRunning(namespace: string, name: string, timeoutMs = 60_000): Promise<V1Pod> {
  return eventually(`${namespace}/${name} running`, async () => {
    const pod = await getPod(namespace, name);
    const all = pod?.status?.containerStatuses ?? [];
    return all.length > 0 && all.every((c) => c.state?.running !== undefined) ? pod : undefined;
  }, timeoutMs);
}

async function waitGone(namespace: string, name: string, timeoutMs: number): Promise<void> {
  await eventually(`${namespace}/${name} gone`, async () => ((await getPod(namespace, name)) === undefined ? true : undefined), timeoutMs);
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

describe('container lifecycle hooks on the nodelet node', () => {
  let namespace = '';
  let hostDir = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-hooks');
    hostDir = await mkdtemp(path.join(os.tmpdir(), 'nodelet-e2e-hooks-'));
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
    if (hostDir !== '') await rm(hostDir, { recursive: true, force: true });
  });

  it('runs a postStart exec hook in the running container, and starts the next container only after it', async () => {
    // The hook takes 3 s, then writes a file; the container waits for that file and prints it.
    await apply(podOf(namespace, 'poststart', {
      containers: [
        {
          name: 'app',
          command: ['sh', '-c', 'until [ -f /tmp/hook ]; do sleep 0.1; done; echo "app read: $(cat /tmp/hook)"; sleep 3600'],
          lifecycle: { postStart: { exec: { command: ['sh', '-c', 'sleep 3; echo "written by postStart" > /tmp/hook'] } } },
        },
        { name: 'next', command: ['sleep', '3600'] },
      ],
    }));
    const running = await waitRunning(namespace, 'poststart');
    const logs = await eventually('the app log', async () => {
      const out = await containerLog(running.metadata?.uid ?? '', 'app');
      return out.includes('app read:') ? out : undefined;
    }, 30_000);
    assert.match(logs, /app read: written by postStart/);
    assert.equal(statusOf(running, 'app')?.restartCount, 0);
    const events = await podEvents(namespace, 'poststart');
    assert.deepEqual(events.filter((e) => (e.reason ?? '').includes('Hook')), [], 'no hook failure');
    const containers = await runtimeContainers(running.metadata?.uid ?? '');
    assert.deepEqual(containers.map((c) => [c.name, c.state]).sort(), [['app', 'CONTAINER_RUNNING'], ['next', 'CONTAINER_RUNNING']]);
    const app = containers.find((c) => c.name === 'app')!;
    const next = containers.find((c) => c.name === 'next')!;
    const hookInRuntime = await crictl(['exec', app.id, 'cat', '/tmp/hook']);
    assert.equal(hookInRuntime.trim(), 'written by postStart');
    const gapMs = (await startedAtMs(next.id)) - (await startedAtMs(app.id));
    console.log(`postStart exec: container "next" started ${seconds(gapMs)} after "app" (app's hook sleeps 3 s)`);
    assert.ok(gapMs >= 2900, `the start of the next container waited for the hook (gap ${gapMs} ms)`);
  });

  it('kills a container whose postStart hook fails, with FailedPostStartHook and Killing events, and restarts it under backoff', async () => {
    // Watching from before the pod exists: every status it ever gets is seen.
    const watch = await watchWaiting(namespace, 'poststart-fails');
    try {
      await apply(podOf(namespace, 'poststart-fails', {
        containers: [{ name: 'app', command: ['sleep', '3600'], lifecycle: { postStart: { exec: { command: ['sh', '-c', 'printf "no config" >&2; exit 3'] } } } }],
      }));
      // One consistent snapshot: the API status, the runtime's instances and the events, read together
      // until they agree. Reading them one after another could catch the next instance (after the
      // restart backoff) in its own postStart, still running, and blame the agent for it.
      const snapshot = await eventually('a restart counted, the container waiting, a PostStartHookError reported, every instance stopped and both events recorded', async () => {
        const pod = await getPod(namespace, 'poststart-fails');
        const app = statusOf(pod, 'app');
        const reason = app?.state?.waiting?.reason;
        const containers = await runtimeContainers(pod?.metadata?.uid ?? '');
        const events = await podEvents(namespace, 'poststart-fails');
        const seen = `restartCount ${app?.restartCount ?? 0}, waiting ${reason ?? '-'}, reported ${watch.seen.map((w) => w.reason).join(',') || '-'}, runtime ${containers.map((c) => c.state).join(',') || '-'}, events ${events.map((e) => `${e.reason ?? ''}/${e.message ?? ''}`).join(', ')}`;
        const waiting = (app?.restartCount ?? 0) >= 1 && (reason === 'CrashLoopBackOff' || reason === 'PostStartHookError');
        const reported = watch.seen.some((w) => w.reason === 'PostStartHookError');
        const stopped = containers.length >= 2 && containers.every((c) => c.state === 'CONTAINER_EXITED');
        const recorded = events.some((e) => e.reason === 'FailedPostStartHook') && events.some((e) => e.reason === 'Killing' && e.message === 'FailedPostStartHook');
        if (pod !== undefined && waiting && reported && stopped && recorded) return { pod, containers, events };
        throw new Error(`not yet: ${seen}`);
      }, 90_000);
      const app = statusOf(snapshot.pod, 'app');
      assert.equal(app?.lastState?.terminated?.exitCode, 137, 'the last instance was killed');
      console.log(`postStart failure: restartCount ${app?.restartCount}, waiting reasons reported: ${watch.seen.map((w) => w.reason).join(', ')}; runtime instances ${snapshot.containers.length}, all exited`);
      const failed = snapshot.events.filter((e) => e.reason === 'FailedPostStartHook');
      assert.ok(failed.every((e) => e.type === 'Warning' && e.message === 'PostStartHook failed'), JSON.stringify(failed.map((e) => e.message)));
      // The handler's message is the waiting message while the failure is the latest word.
      const message = watch.seen.find((w) => w.reason === 'PostStartHookError')?.message ?? '';
      assert.match(message, /^Exec lifecycle hook \(\[sh -c printf "no config" >&2; exit 3\]\) for Container "app" in Pod "poststart-fails_.*" failed - error: command 'sh -c printf "no config" >&2; exit 3' exited with 3: no config, message: "no config"$/);
    } finally {
      watch.stop();
    }
  });

  it('refuses a tcpSocket postStart handler (kept in the API, never runnable) with the event and a restart, never a silent skip', async () => {
    // Watching from before the pod exists: every status it ever gets is seen.
    const watch = await watchWaiting(namespace, 'poststart-tcp');
    try {
      await apply(podOf(namespace, 'poststart-tcp', {
        containers: [{ name: 'app', command: ['sleep', '3600'], lifecycle: { postStart: { tcpSocket: { port: 80 } } } }],
      }));
      const message = await eventually('the invalid handler message', () => Promise.resolve(watch.seen.find((w) => w.reason === 'PostStartHookError')?.message), 90_000);
      assert.equal(message, 'Cannot run handler: invalid handler: tcpSocket is not supported as a lifecycle handler');
      assert.ok((await podEvents(namespace, 'poststart-tcp')).some((e) => e.reason === 'FailedPostStartHook'));
    } finally {
      watch.stop();
    }
  });

  it('runs an httpGet postStart hook against the pod IP (an httpd in the pod), before the container counts as started', async () => {
    await apply(podOf(namespace, 'poststart-http', {
      initContainers: [{
        name: 'web',
        restartPolicy: 'Always',
        command: ['sh', '-c', 'mkdir -p /www && echo ok > /www/hook && exec httpd -f -vv -p 8080 -h /www'],
        startupProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1, failureThreshold: 30 },
      }],
      containers: [{ name: 'app', command: ['sleep', '3600'], ports: [{ name: 'hook', containerPort: 8080 }], lifecycle: { postStart: { httpGet: { path: '/hook', port: 'hook', httpHeaders: [{ name: 'X-Hook', value: 'postStart' }] } } } }],
    }));
    const running = await waitRunning(namespace, 'poststart-http');
    assert.equal(statusOf(running, 'app')?.restartCount, 0);
    const log = await eventually('the hook request in the httpd log', async () => {
      const out = await containerLog(running.metadata?.uid ?? '', 'web');
      return out.includes('/hook') ? out : undefined;
    }, 20_000);
    console.log(`httpGet postStart: httpd saw: ${log.split('\n').filter((l) => l.includes('/hook') || l.includes('kube-lifecycle')).join(' | ')}`);
    assert.match(log, /\/hook/);
    assert.deepEqual((await podEvents(namespace, 'poststart-http')).filter((e) => (e.reason ?? '').includes('Hook')), []);
  });

  it('runs a preStop exec hook to completion before the container gets SIGTERM, within the grace period', async () => {
    const dir = path.join(hostDir, 'prestop-exec');
    await apply(podOf(namespace, 'prestop-exec', {
      grace: 15,
      containers: [{
        name: 'app',
        // SIGTERM leaves a mark (sh as PID 1 ignores it otherwise).
        command: ['sh', '-c', 'trap "touch /data/term; exit 0" TERM; while true; do sleep 0.2; done'],
        volumeMounts: [{ name: 'data', mountPath: '/data' }],
        lifecycle: { preStop: { exec: { command: ['sh', '-c', 'touch /data/prestop-start; sleep 2; echo drained > /data/prestop-done'] } } },
      }],
      volumes: [{ name: 'data', hostPath: { path: dir, type: 'DirectoryOrCreate' } }],
    }));
    const running = await waitRunning(namespace, 'prestop-exec');
    const [container] = await runtimeContainers(running.metadata?.uid ?? '');
    const deletedAt = Date.now();
    await kubectl(['delete', 'pod', '-n', namespace, 'prestop-exec', '--wait=false']);
    await waitGone(namespace, 'prestop-exec', 40_000);
    const goneMs = Date.now() - deletedAt;
    assert.equal(await readFile(path.join(dir, 'prestop-done'), 'utf8'), 'drained\n', 'the hook ran to its end');
    const hookStart = (await stat(path.join(dir, 'prestop-start'))).mtimeMs;
    const hookDone = (await stat(path.join(dir, 'prestop-done'))).mtimeMs;
    const term = (await stat(path.join(dir, 'term'))).mtimeMs;
    console.log(`preStop exec: hook began ${seconds(hookStart - deletedAt)} after the delete, finished ${seconds(hookDone - deletedAt)}, SIGTERM at ${seconds(term - deletedAt)}, pod gone after ${seconds(goneMs)} (grace 15 s)`);
    assert.ok(hookDone <= term, 'SIGTERM came after the hook finished');
    assert.ok(term - hookStart >= 1900, `the hook's 2 s ran before SIGTERM (${term - hookStart} ms)`);
    assert.deepEqual(await runtimeContainers(running.metadata?.uid ?? ''), [], `container ${container?.id ?? ''} removed from the runtime`);
    assert.ok(goneMs < 15_000 + 10_000, `gone within the grace period and the agent's cleanup (${goneMs} ms)`);
  });

  it('runs the preStop hook of a force-deleted pod (--grace-period=0 --force) before SIGTERM, as the kubelet does', async () => {
    const dir = path.join(hostDir, 'prestop-forced');
    await apply(podOf(namespace, 'prestop-forced', {
      grace: 15,
      containers: [{
        name: 'app',
        command: ['sh', '-c', 'trap "touch /data/term; exit 0" TERM; while true; do sleep 0.2; done'],
        volumeMounts: [{ name: 'data', mountPath: '/data' }],
        // The API server marks the pod deleted with grace 0 before removing it: the kubelet then runs the
        // hook within its minimum grace of 1 s, so the hook is quick.
        lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo drained > /data/prestop-done'] } } },
      }],
      volumes: [{ name: 'data', hostPath: { path: dir, type: 'DirectoryOrCreate' } }],
    }));
    const running = await waitRunning(namespace, 'prestop-forced');
    const uid = running.metadata?.uid ?? '';
    const deletedAt = Date.now();
    await kubectl(['delete', 'pod', '-n', namespace, 'prestop-forced', '--grace-period=0', '--force', '--wait=false']);
    assert.equal(await getPod(namespace, 'prestop-forced'), undefined, 'the API object is gone at once');
    await eventually('the force-deleted pod\'s containers removed from the runtime', async () => ((await runtimeContainers(uid)).length === 0 ? true : undefined), 40_000);
    const stoppedMs = Date.now() - deletedAt;
    assert.equal(await readFile(path.join(dir, 'prestop-done'), 'utf8'), 'drained\n', 'the hook ran to its end');
    const hookDone = (await stat(path.join(dir, 'prestop-done'))).mtimeMs;
    const term = (await stat(path.join(dir, 'term'))).mtimeMs;
    assert.ok(hookDone <= term, 'SIGTERM came after the hook finished');
    const killing = (await podEvents(namespace, 'prestop-forced')).filter((e) => e.reason === 'Killing' && e.involvedObject.uid === uid);
    assert.deepEqual(killing.map((e) => e.message), ['Stopping container app'], 'the Killing event, on the deleted pod');
    console.log(`preStop exec of a force-deleted pod: hook finished ${seconds(hookDone - deletedAt)} after the delete, SIGTERM at ${seconds(term - deletedAt)}, containers removed after ${seconds(stoppedMs)} (grace 15 s)`);
  });

  it('delays the stop by a sleep preStop hook: SIGTERM about N s after the delete, the container running meanwhile', async () => {
    const dir = path.join(hostDir, 'prestop-sleep');
    await apply(podOf(namespace, 'prestop-sleep', {
      grace: 10,
      containers: [{
        name: 'app',
        command: ['sh', '-c', 'trap "touch /data/term; exit 0" TERM; while true; do sleep 0.2; done'],
        volumeMounts: [{ name: 'data', mountPath: '/data' }],
        lifecycle: { preStop: { sleep: { seconds: 4 } } },
      }],
      volumes: [{ name: 'data', hostPath: { path: dir, type: 'DirectoryOrCreate' } }],
    }));
    const running = await waitRunning(namespace, 'prestop-sleep');
    const uid = running.metadata?.uid ?? '';
    const deletedAt = Date.now();
    await kubectl(['delete', 'pod', '-n', namespace, 'prestop-sleep', '--wait=false']);
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const midway = await runtimeContainers(uid);
    assert.deepEqual(midway.map((c) => c.state), ['CONTAINER_RUNNING'], '2.5 s after the delete the container still runs (its preStop sleeps)');
    await waitGone(namespace, 'prestop-sleep', 40_000);
    const goneMs = Date.now() - deletedAt;
    const termMs = (await stat(path.join(dir, 'term'))).mtimeMs - deletedAt;
    console.log(`preStop sleep 4 s: SIGTERM ${seconds(termMs)} after the delete (kubectl delete issued at 0), pod gone after ${seconds(goneMs)} (grace 10 s)`);
    assert.ok(termMs >= 4000, `SIGTERM only after the 4 s sleep (${termMs} ms)`);
  });
});
