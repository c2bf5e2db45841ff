/**
 * End to end: container-level `restartPolicy` and `restartPolicyRules` (the kubelet's
 * ContainerRestartRules, beta and on since 1.35) decide whether a container runs again, over the
 * pod's policy; the pod's phase follows them. Each case is asserted on the API (status, restart
 * count, phase) and on the runtime (crictl: every instance of the container, with its exit code).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { NODE_NAME, apply, containerStatusOf, createNamespace, deleteNamespace, eventually, expectRuntime, getPod, requireCluster, runtimePicture, waitForPhase } from './helpers.js';

/** A script that exits `first` on its first run and `then` on every later one (a marker in an emptyDir). */
function exitsThen(first: number, then: number | 'sleep'): string {
  const later = then === 'sleep' ? 'exec sleep 3600' : `exit ${then}`;
  return `if [ -f /data/ran ]; then ${later}; fi; touch /data/ran; exit ${first}`;
}

interface Container {
  readonly name: string;
  readonly script: string;
  readonly policy?: { restartPolicy: string; restartPolicyRules?: object[] };
}

function pod(namespace: string, name: string, spec: { restartPolicy: string; containers: Container[]; init?: Container[] }): object {
  const container = (c: Container): object => ({
    name: c.name,
    image: 'busybox:1.35',
    command: ['sh', '-c', c.script],
    volumeMounts: [{ name: 'data', mountPath: '/data' }],
    ...(c.policy ?? {}),
  });
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName: NODE_NAME,
      restartPolicy: spec.restartPolicy,
      terminationGracePeriodSeconds: 1,
      volumes: [{ name: 'data', emptyDir: {} }],
      ...(spec.init === undefined ? {} : { initContainers: spec.init.map(container) }),
      containers: spec.containers.map(container),
    },
  };
}

const restartOn = (...codes: number[]): object[] => [{ action: 'Restart', exitCodes: { operator: 'In', values: codes } }];

async function uidOf(namespace: string, name: string): Promise<string> {
  return (await getPod(namespace, name))?.metadata?.uid ?? '';
}

describe('container restart policies and rules on nodelet', () => {
  let ns = '';

  before(async () => {
    requireCluster();
    ns = await createNamespace('e2e-restart-rules');
  });

  after(async () => {
    if (ns !== '') await deleteNamespace(ns);
  });

  it('restarts a container on the exit code its rule lists, under pod and container Never, and not on another', async () => {
    await apply(pod(ns, 'rule-match', { restartPolicy: 'Never', containers: [{ name: 'main', script: exitsThen(42, 1), policy: { restartPolicy: 'Never', restartPolicyRules: restartOn(42) } }] }));
    const p = await waitForPhase(ns, 'rule-match', 'Failed', 120_000);
    const status = containerStatusOf(p, 'main');
    assert.equal(status?.restartCount, 1);
    assert.equal(status?.state?.terminated?.exitCode, 1);
    assert.equal(status?.lastState?.terminated?.exitCode, 42);
    await expectRuntime(p.metadata?.uid ?? '', { sandboxes: ['sandbox#0:NOTREADY'], containers: ['main#0:EXITED(42)', 'main#1:EXITED(1)'] });
  });

  it('does not restart a container whose own policy is Never in a pod whose policy is Always', async () => {
    await apply(pod(ns, 'own-never', { restartPolicy: 'Always', containers: [{ name: 'once', script: 'exit 3', policy: { restartPolicy: 'Never' } }, { name: 'keeper', script: 'exec sleep 3600' }] }));
    const p = await eventually('once terminated, keeper running', async () => {
      const x = await getPod(ns, 'own-never');
      return containerStatusOf(x ?? {}, 'once')?.state?.terminated !== undefined && containerStatusOf(x ?? {}, 'keeper')?.state?.running !== undefined ? x : undefined;
    });
    assert.equal(p.status?.phase, 'Running');
    assert.equal(containerStatusOf(p, 'once')?.state?.terminated?.exitCode, 3);
    // Past the first 10 s restart backoff: a restart would have happened by now.
    await new Promise((resolve) => setTimeout(resolve, 15_000));
    const later = await getPod(ns, 'own-never');
    assert.equal(containerStatusOf(later ?? {}, 'once')?.restartCount, 0);
    assert.equal(containerStatusOf(later ?? {}, 'once')?.state?.terminated?.exitCode, 3);
    assert.deepEqual(await runtimePicture(await uidOf(ns, 'own-never')), { sandboxes: ['sandbox#0:READY'], containers: ['keeper#0:RUNNING', 'once#0:EXITED(3)'] });
  });

  it('restarts a container whose own policy is Always in a pod whose policy is Never, after it succeeded', async () => {
    await apply(pod(ns, 'own-always', { restartPolicy: 'Never', containers: [{ name: 'main', script: exitsThen(0, 'sleep'), policy: { restartPolicy: 'Always' } }] }));
    const p = await eventually('main running again', async () => {
      const x = await getPod(ns, 'own-always');
      return containerStatusOf(x ?? {}, 'main')?.state?.running !== undefined && containerStatusOf(x ?? {}, 'main')?.restartCount === 1 ? x : undefined;
    }, 120_000);
    assert.equal(p.status?.phase, 'Running');
    assert.equal(containerStatusOf(p, 'main')?.lastState?.terminated?.exitCode, 0);
    await expectRuntime(p.metadata?.uid ?? '', { sandboxes: ['sandbox#0:READY'], containers: ['main#0:EXITED(0)', 'main#1:RUNNING'] });
  });

  it('retries an init container whose own policy is OnFailure in a pod whose policy is Never', async () => {
    await apply(pod(ns, 'init-retry', { restartPolicy: 'Never', init: [{ name: 'setup', script: exitsThen(5, 0), policy: { restartPolicy: 'OnFailure' } }], containers: [{ name: 'app', script: 'exit 0' }] }));
    const p: V1Pod = await waitForPhase(ns, 'init-retry', 'Succeeded', 120_000);
    const setup = containerStatusOf(p, 'setup', true);
    assert.equal(setup?.restartCount, 1);
    assert.equal(setup?.state?.terminated?.exitCode, 0);
    assert.equal(setup?.lastState?.terminated?.exitCode, 5);
    await expectRuntime(p.metadata?.uid ?? '', { sandboxes: ['sandbox#0:NOTREADY'], containers: ['app#0:EXITED(0)', 'setup#0:EXITED(5)', 'setup#1:EXITED(0)'] });
  });
});
