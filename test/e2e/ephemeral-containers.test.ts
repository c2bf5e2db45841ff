/**
 * End to end: `kubectl debug` (ephemeral containers, issue 9) with the real kubectl on the test
 * cluster. `kubectl debug --target=main` adds an ephemeral container through the pod's
 * `ephemeralcontainers` subresource; nodelet must start it in the pod's sandbox, in the process
 * namespace of `main` (its `ps` shows main's `sleep 3601`; crictl's pids share one pid namespace),
 * report it in `ephemeralContainerStatuses` running and then terminated with its exit code, never
 * restart it, leave `main` alone (same container ID, restart count 0, the pod Ready), let
 * `kubectl attach` and `kubectl logs -c` reach it, and remove it with the pod.
 */
import assert from 'node:assert/strict';
import { readlink } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { NODE_NAME, apply, busyboxPod, containersOf, createNamespace, crictl, deleteNamespace, eventually, getPod, kubectl, kubectlOutcome, requireCluster, runtimeContainers, sandboxesOf, waitForPhase } from './helpers.js';

function ephemeralStatus(pod: V1Pod | undefined, name: string): V1ContainerStatus | undefined {
  return pod?.status?.ephemeralContainerStatuses?.find((s) => s.name === name);
}

function readyCondition(pod: V1Pod | undefined): string | undefined {
  return pod?.status?.conditions?.find((c) => c.type === 'Ready')?.status;
}

interface Inspected {
  readonly status: { readonly id: string; readonly state: string };
  readonly info: { readonly pid?: number; readonly sandboxID?: string };
}

async function inspect(id: string): Promise<Inspected> {
  return JSON.parse(await crictl(['inspect', '-o', 'json', id])) as Inspected;
}

/** The pid namespace of a running container's first process, as the node sees it (`pid:[…]`). */
async function pidNamespace(id: string): Promise<string> {
  const pid = (await inspect(id)).info.pid ?? 0;
  assert.ok(pid > 0, `crictl inspect gives the process of ${id}`);
  return readlink(`/proc/${pid}/ns/pid`);
}

describe('kubectl debug: ephemeral containers', () => {
  let namespace = '';
  const name = 'target';
  const debuggerName = 'debugger';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-debug');
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('starts once in the target\'s pid namespace, is attached to and reported, never restarts, leaves main alone, and goes with the pod', async () => {
    await apply(busyboxPod({ name, namespace, nodeName: NODE_NAME, script: 'exec sleep 3601' }));
    const running = await eventually(`${name} Ready`, async () => {
      const pod = await getPod(namespace, name);
      return pod?.status?.phase === 'Running' && readyCondition(pod) === 'True' ? pod : undefined;
    });
    const uid = running.metadata?.uid ?? '';
    const mainBefore = running.status?.containerStatuses?.[0];
    const mainId = (mainBefore?.containerID ?? '').replace(/^containerd:\/\//, '');
    assert.notEqual(mainId, '');
    const sandboxId = (await inspect(mainId)).info.sandboxID ?? '';

    // -i without -t: stdin open (the container waits on `read`), nothing attached yet.
    const started = Date.now();
    const script = 'ps; echo waiting; read line; echo "got $line"; exit 7';
    await kubectl(['debug', '-n', namespace, name, '--image=busybox:1.35', `--target=main`, `--container=${debuggerName}`, '-i', '--attach=false', '--', 'sh', '-c', script]);
    const debugRunning = await eventually('the debugger reported running', async () => {
      const pod = await getPod(namespace, name);
      return ephemeralStatus(pod, debuggerName)?.state?.running === undefined ? undefined : pod;
    });
    console.log(`kubectl debug → ephemeralContainerStatuses running: ${Date.now() - started} ms`);
    const status = ephemeralStatus(debugRunning, debuggerName);
    assert.equal(status?.ready, false);
    assert.equal(status?.restartCount, 0);
    const debuggerId = (status?.containerID ?? '').replace(/^containerd:\/\//, '');

    // The runtime: the debugger runs in the pod's sandbox, in main's pid namespace.
    const debuggerInspected = await inspect(debuggerId);
    assert.equal(debuggerInspected.status.state, 'CONTAINER_RUNNING');
    assert.equal(debuggerInspected.info.sandboxID, sandboxId, 'in the pod\'s own sandbox');
    const [mainNs, debuggerNs] = await Promise.all([pidNamespace(mainId), pidNamespace(debuggerId)]);
    console.log(`pid namespaces: main ${mainNs}, debugger ${debuggerNs}`);
    assert.equal(debuggerNs, mainNs);
    // What the debugger's ps printed (through the node server's containerLogs): main's process is there.
    const psOut = await eventually('the debugger\'s ps output', async () => {
      const out = await kubectl(['logs', '-n', namespace, name, '-c', debuggerName]);
      return out.includes('waiting') ? out : undefined;
    });
    assert.match(psOut, /sleep 3601/, `the debugger's ps shows main's process:\n${psOut}`);
    assert.equal((await getPod(namespace, name))?.status?.containerStatuses?.[0]?.restartCount, 0);

    // kubectl attach reaches the ephemeral container by name: the line it sends ends the script (exit 7).
    const attached = await kubectlOutcome(['attach', '-i', '-n', namespace, name, '-c', debuggerName], 'go\n');
    console.log(`kubectl attach -i -c ${debuggerName}: exit ${String(attached.code)}, stdout ${JSON.stringify(attached.stdout)}, stderr ${JSON.stringify(attached.stderr)}`);
    const done = await eventually('the debugger reported terminated', async () => {
      const pod = await getPod(namespace, name);
      return ephemeralStatus(pod, debuggerName)?.state?.terminated === undefined ? undefined : pod;
    });
    assert.equal(ephemeralStatus(done, debuggerName)?.state?.terminated?.exitCode, 7);
    assert.match(await kubectl(['logs', '-n', namespace, name, '-c', debuggerName]), /got go/);

    // Several syncs later (the pod status is rewritten meanwhile), still exactly one debugger, exited.
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    const containers = await runtimeContainers(uid);
    assert.deepEqual(
      containers.map((c) => [c.name, c.id, c.state, c.exitCode]),
      [
        [debuggerName, debuggerId, 'CONTAINER_EXITED', 7],
        ['main', mainId, 'CONTAINER_RUNNING', 0],
      ],
    );
    const later = await getPod(namespace, name);
    assert.equal(later?.status?.phase, 'Running');
    assert.equal(readyCondition(later), 'True');
    assert.equal(later?.status?.containerStatuses?.[0]?.containerID, `containerd://${mainId}`);
    assert.equal(later?.status?.containerStatuses?.[0]?.restartCount, 0);
    assert.equal(ephemeralStatus(later, debuggerName)?.restartCount, 0);

    // Deleting the pod removes both containers and the sandbox from the runtime.
    await kubectl(['delete', 'pod', '-n', namespace, name, '--timeout=90s']);
    const left = await eventually('the runtime to hold nothing of the pod', async () => {
      const [containers, sandboxes] = await Promise.all([containersOf(uid), sandboxesOf(uid)]);
      return containers.length + sandboxes.length === 0 ? { containers, sandboxes } : undefined;
    });
    assert.deepEqual(left, { containers: [], sandboxes: [] });
  });

  it('a debugger still running is killed with its pod', async () => {
    const pod = 'target2';
    await apply(busyboxPod({ name: pod, namespace, nodeName: NODE_NAME, script: 'exec sleep 3601' }));
    const running = await waitForPhase(namespace, pod, 'Running');
    const uid = running.metadata?.uid ?? '';
    await kubectl(['debug', '-n', namespace, pod, '--image=busybox:1.35', '--target=main', `--container=${debuggerName}`, '--attach=false', '--', 'sleep', '3600']);
    await eventually('the debugger running', async () => (ephemeralStatus(await getPod(namespace, pod), debuggerName)?.state?.running === undefined ? undefined : true));
    const before = await runtimeContainers(uid);
    assert.deepEqual(before.map((c) => [c.name, c.state]), [[debuggerName, 'CONTAINER_RUNNING'], ['main', 'CONTAINER_RUNNING']]);
    await kubectl(['delete', 'pod', '-n', namespace, pod, '--timeout=90s']);
    await eventually('the runtime to hold nothing of the pod', async () => ((await runtimeContainers(uid)).length === 0 ? true : undefined));
  });
});
