/**
 * Fault: the agent is killed with SIGKILL and started again while pods with readiness probes run.
 * As the kubelet (v1.35+, `setReadyStateOnKubeletRestart`), a Ready pod whose containers were
 * running before the agent started stays Ready: no Ready flap (endpoints would drop every pod of
 * the node at each agent upgrade). Its probes take over afterwards: a container whose probe fails
 * once the new agent runs goes NotReady after its failure threshold, without a restart.
 *
 * Checked in the API (the Ready condition sampled every 250 ms, and its lastTransitionTime, which
 * any True → False → True written between two samples moves) and in the runtime (same container IDs,
 * still running).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { NODE_NAME, apply, createNamespace, crictl, eventually, kubectl, requireCluster } from '../e2e/helpers.js';
import { clusterUp, daemonPid, ensureClusterUp, killDaemon } from './harness.js';
import { deleteNamespaceAndWait } from './state.js';

const PROBED = ['steady', 'flip'] as const;
type Probed = (typeof PROBED)[number];

function probedPod(namespace: string, name: Probed): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName: NODE_NAME,
      terminationGracePeriodSeconds: 1,
      containers: [{
        name: 'app',
        image: 'docker.io/library/busybox:1.35',
        imagePullPolicy: 'IfNotPresent',
        command: ['sh', '-c', 'touch /tmp/ready; exec sleep 3600'],
        readinessProbe: { exec: { command: ['cat', '/tmp/ready'] }, periodSeconds: 1, failureThreshold: 3 },
      }],
    },
  };
}

async function pods(namespace: string): Promise<Map<string, V1Pod>> {
  const list = JSON.parse(await kubectl(['get', 'pods', '-n', namespace, '-o', 'json'])) as { items: V1Pod[] };
  return new Map(list.items.map((p) => [p.metadata?.name ?? '', p]));
}

function readyCondition(pod: V1Pod | undefined): { status: string; since: string } {
  const c = pod?.status?.conditions?.find((x) => x.type === 'Ready');
  return { status: c?.status ?? 'none', since: String(c?.lastTransitionTime ?? '') };
}

function containerOf(pod: V1Pod | undefined): { id: string; startedAtMs: number; restarts: number } {
  const s = pod?.status?.containerStatuses?.[0];
  return { id: (s?.containerID ?? '').replace('containerd://', ''), startedAtMs: Date.parse(String(s?.state?.running?.startedAt ?? '')), restarts: s?.restartCount ?? -1 };
}

/** Samples both pods' Ready status until stopped. */
class ReadySampler {
  readonly samples: { atMs: number; ready: Record<Probed, string> }[] = [];
  private running = true;
  private readonly loop: Promise<void>;

  constructor(namespace: string) {
    this.loop = (async () => {
      while (this.running) {
        const now = await pods(namespace).catch(() => undefined);
        if (now !== undefined) this.samples.push({ atMs: Date.now(), ready: { steady: readyCondition(now.get('steady')).status, flip: readyCondition(now.get('flip')).status } });
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }
}

describe('pod readiness across an agent restart', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    await ensureClusterUp();
    namespace = await createNamespace('faults-ready');
  });

  after(async () => {
    await ensureClusterUp();
    if (namespace !== '') await deleteNamespaceAndWait(namespace);
  });

  it('keeps a Ready pod Ready through a SIGKILL and restart of the agent, then its probe decides again (no container restarted)', async (t) => {
    for (const name of PROBED) await apply(probedPod(namespace, name));
    const ready = await eventually('both pods Ready', async () => {
      const now = await pods(namespace);
      return PROBED.every((n) => readyCondition(now.get(n)).status === 'True') ? now : undefined;
    }, 60_000);
    const initial = new Map(PROBED.map((n) => [n, { ready: readyCondition(ready.get(n)), container: containerOf(ready.get(n)) }]));
    // The kubelet keeps readiness only for containers started more than 10 s before it started.
    const latestStart = Math.max(...[...initial.values()].map((b) => b.container.startedAtMs));
    assert.ok(Number.isFinite(latestStart), 'both containers report startedAt');
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, latestStart + 12_000 - Date.now())));

    const sampler = new ReadySampler(namespace);
    const killedPid = await killDaemon('nodelet');
    // While no agent runs, the flip container's probe starts failing (through the runtime: exec through the node server needs the agent).
    await crictl(['exec', initial.get('flip')?.container.id ?? '', 'rm', '/tmp/ready']);
    await clusterUp();
    const upAt = Date.now();
    const newPid = await daemonPid('nodelet');
    assert.ok(newPid !== undefined && newPid !== killedPid, 'a new agent process runs');
    const flipped = await eventually('the flip pod NotReady once its probe failed 3 times under the new agent', async () => {
      const now = await pods(namespace);
      return readyCondition(now.get('flip')).status === 'False' ? Date.now() - upAt : undefined;
    }, 30_000);
    // Long enough for the steady pod's probe to have run several times under the new agent.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, upAt + 8_000 - Date.now())));
    await sampler.stop();
    const final = await pods(namespace);

    const steadyNotReady = sampler.samples.filter((s) => s.ready.steady !== 'True');
    const flipBeforeUp = sampler.samples.filter((s) => s.atMs < upAt);
    t.diagnostic(`${sampler.samples.length} samples over ${((sampler.samples.at(-1)?.atMs ?? 0) - (sampler.samples[0]?.atMs ?? 0)) / 1000} s; steady not Ready in ${steadyNotReady.length}; flip NotReady ${flipped} ms after up.sh returned (probe period 1 s, failureThreshold 3)`);
    assert.ok(sampler.samples.length >= 20, `sampled the whole window (${sampler.samples.length})`);
    assert.deepEqual(steadyNotReady, [], 'the steady pod never left Ready');
    assert.deepEqual(readyCondition(final.get('steady')), initial.get('steady')?.ready, 'its Ready condition never transitioned (lastTransitionTime kept)');
    assert.ok(flipBeforeUp.every((s) => s.ready.flip === 'True'), 'the flip pod was Ready until the new agent probed it');
    for (const name of PROBED) {
      const now = containerOf(final.get(name));
      assert.equal(now.id, initial.get(name)?.container.id, `${name}: the same container`);
      assert.equal(now.restarts, 0, `${name}: not restarted`);
      const state = (JSON.parse(await crictl(['inspect', now.id])) as { status: { state: string } }).status.state;
      assert.equal(state, 'CONTAINER_RUNNING', `${name}: still running in the runtime`);
    }
  });
});
