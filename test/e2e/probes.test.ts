/**
 * End to end: liveness, readiness and startup probes on the test cluster, as users see them —
 * the API (container ready/started flags, the Ready condition, restart counts, Unhealthy and
 * Killing events) and the runtime (crictl: every container instance of the pod); and a deletion
 * that cancels a liveness kill stuck in a long grace period.
 * The gRPC probe is proven against a real gRPC health server in the unit suite
 * (reconcilers/probes/run-probe.test.ts): the test images have no gRPC server yet.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { NODE_NAME, apply, createNamespace, deleteNamespace, eventually, getPod, kubectl, podEvents, requireCluster, runtimeContainers, runtimeSandboxes } from './helpers.js';

function probedPod(namespace: string, name: string, app: Partial<V1Container>): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName: NODE_NAME,
      terminationGracePeriodSeconds: 2,
      containers: [{ name: 'app', image: 'busybox:1.35', ...app }],
    },
  };
}

function appStatus(pod: V1Pod | undefined): { ready?: boolean; started?: boolean; restartCount?: number; containerID?: string } | undefined {
  return pod?.status?.containerStatuses?.find((c) => c.name === 'app');
}

function condition(pod: V1Pod | undefined, type: string): { status?: string; lastTransitionTime?: Date } | undefined {
  return pod?.status?.conditions?.find((c) => c.type === type);
}

describe('probes on the nodelet node', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-probes');
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('keeps a pod not Ready until its readiness probe passes, then Ready, and not Ready again when it fails', async () => {
    const started = Date.now();
    // Ready after ~6 s, unready again from ~16 s on.
    await apply(probedPod(namespace, 'readiness', {
      command: ['sh', '-c', 'sleep 6; touch /tmp/ready; sleep 10; rm /tmp/ready; sleep 3600'],
      readinessProbe: { exec: { command: ['cat', '/tmp/ready'] }, periodSeconds: 1, failureThreshold: 1 },
    }));
    const running = await eventually('the container running but not ready', async () => {
      const pod = await getPod(namespace, 'readiness');
      return pod?.status?.phase === 'Running' && appStatus(pod)?.containerID !== undefined ? pod : undefined;
    });
    assert.equal(appStatus(running)?.ready, false, 'not ready before the probe passed');
    assert.equal(condition(running, 'Ready')?.status, 'False');
    const ready = await eventually('Ready', async () => {
      const pod = await getPod(namespace, 'readiness');
      return condition(pod, 'Ready')?.status === 'True' ? pod : undefined;
    }, 30_000);
    const becameReadyAfterMs = Date.now() - started;
    assert.equal(appStatus(ready)?.ready, true);
    assert.equal(condition(ready, 'ContainersReady')?.status, 'True');
    const unready = await eventually('not Ready again', async () => {
      const pod = await getPod(namespace, 'readiness');
      return condition(pod, 'Ready')?.status === 'False' ? pod : undefined;
    }, 30_000);
    assert.equal(appStatus(unready)?.ready, false);
    assert.equal(appStatus(unready)?.restartCount, 0, 'readiness never restarts a container');
    const events = await podEvents(namespace, 'readiness');
    assert.ok(events.some((e) => e.reason === 'Unhealthy' && (e.message ?? '').startsWith('Readiness probe failed: ')), 'Unhealthy events name the readiness probe');
    const containers = await runtimeContainers(ready.metadata?.uid ?? '');
    assert.deepEqual(containers.map((c) => [c.name, c.state]), [['app', 'CONTAINER_RUNNING']], 'one container instance, still running');
    console.log(`readiness: Ready ${Math.round(becameReadyAfterMs / 100) / 10} s after the pod was applied (the container turns ready at ~6 s)`);
  });

  it('restarts a container whose liveness probe fails, with Unhealthy and Killing events, and counts it', async () => {
    await apply(probedPod(namespace, 'liveness', {
      command: ['sh', '-c', 'touch /tmp/healthy; sleep 4; rm /tmp/healthy; sleep 3600'],
      livenessProbe: { exec: { command: ['cat', '/tmp/healthy'] }, periodSeconds: 1, failureThreshold: 2 },
    }));
    const restarted = await eventually('a restart counted', async () => {
      const pod = await getPod(namespace, 'liveness');
      return (appStatus(pod)?.restartCount ?? 0) >= 1 && pod?.status?.phase === 'Running' ? pod : undefined;
    }, 60_000);
    const events = await podEvents(namespace, 'liveness');
    assert.ok(events.some((e) => e.reason === 'Unhealthy' && (e.message ?? '').startsWith('Liveness probe failed: ')));
    assert.ok(events.some((e) => e.reason === 'Killing' && e.message === 'Container app failed liveness probe, will be restarted'));
    const containers = await runtimeContainers(restarted.metadata?.uid ?? '');
    const attempts = containers.map((c) => c.attempt).sort((a, b) => a - b);
    assert.ok(containers.length >= 2, `the runtime holds every instance: ${JSON.stringify(attempts)}`);
    assert.equal(containers.filter((c) => c.state === 'CONTAINER_RUNNING').length, 1, 'exactly one instance runs');
    assert.equal(attempts[0], 0);
    assert.equal(attempts[1], 1);
  });

  it('deletes a pod whose liveness kill waits out an hour of grace: the deletion cancels that sync and stops it with its own grace, as the kubelet', async () => {
    // PID 1 ignores SIGTERM, so the liveness kill's StopContainer waits the whole grace period.
    const manifest = probedPod(namespace, 'stuck-kill', {
      command: ['sh', '-c', "trap '' TERM; touch /tmp/healthy; sleep 2; rm /tmp/healthy; while true; do sleep 1; done"],
      livenessProbe: { exec: { command: ['cat', '/tmp/healthy'] }, periodSeconds: 1, failureThreshold: 1 },
    }) as { spec: { terminationGracePeriodSeconds: number } };
    manifest.spec.terminationGracePeriodSeconds = 3600;
    await apply(manifest);
    const killing = await eventually('the liveness kill under way', async () => {
      const events = await podEvents(namespace, 'stuck-kill');
      return events.some((e) => e.reason === 'Killing' && e.message === 'Container app failed liveness probe, will be restarted') ? await getPod(namespace, 'stuck-kill') : undefined;
    }, 60_000);
    const uid = killing.metadata?.uid ?? '';
    // Let the kill settle into its wait, then delete with a short grace period.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.equal((await runtimeContainers(uid)).filter((c) => c.state === 'CONTAINER_RUNNING').length, 1, 'the killed container still runs (SIGTERM ignored)');
    const deletedAt = Date.now();
    await kubectl(['delete', 'pod', '-n', namespace, 'stuck-kill', '--grace-period=1', '--wait=false']);
    await eventually('the pod gone from the API', async () => ((await getPod(namespace, 'stuck-kill')) === undefined ? true : undefined), 60_000);
    const goneMs = Date.now() - deletedAt;
    assert.deepEqual(await runtimeContainers(uid), [], 'no container of the pod left in the runtime');
    assert.deepEqual(await runtimeSandboxes(uid), [], 'no sandbox of the pod left in the runtime');
    console.log(`a pod deleted with grace 1 s during a liveness kill with grace 3600 s: gone from the API ${Math.round(goneMs / 100) / 10} s after the delete`);
  });

  it('serves an httpGet readiness probe and a tcpSocket liveness probe from a web server in the pod', async () => {
    await apply(probedPod(namespace, 'web', {
      command: ['sh', '-c', 'mkdir -p /www && echo ok > /www/index.html && httpd -f -p 8080 -h /www'],
      ports: [{ name: 'http', containerPort: 8080 }],
      readinessProbe: { httpGet: { path: '/index.html', port: 'http' }, periodSeconds: 1 },
      livenessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1, failureThreshold: 1 },
    }));
    const ready = await eventually('the web pod Ready', async () => {
      const pod = await getPod(namespace, 'web');
      return condition(pod, 'Ready')?.status === 'True' ? pod : undefined;
    }, 30_000);
    // Several liveness periods later, nothing was restarted.
    await new Promise((resolve) => setTimeout(resolve, 4000));
    const later = await getPod(namespace, 'web');
    assert.equal(appStatus(later)?.restartCount, 0);
    assert.equal(condition(later, 'Ready')?.status, 'True');
    const containers = await runtimeContainers(ready.metadata?.uid ?? '');
    assert.equal(containers.length, 1);
  });

  it('holds liveness and readiness until the startup probe succeeds, reporting started only then', async () => {
    await apply(probedPod(namespace, 'startup', {
      command: ['sh', '-c', 'sleep 5; touch /tmp/started; sleep 3600'],
      startupProbe: { exec: { command: ['cat', '/tmp/started'] }, periodSeconds: 1, failureThreshold: 30 },
      // Would restart the container at once if it ran before the startup probe passed.
      livenessProbe: { exec: { command: ['cat', '/tmp/started'] }, periodSeconds: 1, failureThreshold: 1 },
    }));
    const running = await eventually('running, not started', async () => {
      const pod = await getPod(namespace, 'startup');
      return appStatus(pod)?.containerID !== undefined && pod?.status?.phase === 'Running' ? pod : undefined;
    });
    assert.equal(appStatus(running)?.started, false);
    assert.equal(appStatus(running)?.ready, false);
    const started = await eventually('started and ready', async () => {
      const pod = await getPod(namespace, 'startup');
      return appStatus(pod)?.started === true && appStatus(pod)?.ready === true ? pod : undefined;
    }, 40_000);
    assert.equal(appStatus(started)?.restartCount, 0, 'liveness never ran before startup passed');
    const containers = await runtimeContainers(started.metadata?.uid ?? '');
    assert.deepEqual(containers.map((c) => c.attempt), [0]);
  });
});
