/**
 * End to end: each container's OOM score adjustment by QoS, as the kubelet sets it, read where the
 * kernel applies it (`/proc/1/oom_score_adj` inside the running container, through the runtime) and
 * in what the runtime was asked for (`crictl inspect`: the OCI spec's process.oomScoreAdj).
 */
import assert from 'node:assert/strict';
import os from 'node:os';
import { after, before, describe, it } from 'node:test';
import { NODE_NAME, apply, createNamespace, crictl, deleteNamespace, eventually, getPod, requireCluster, runtimeContainers } from './helpers.js';

const MiB = 2 ** 20;

function sleeper(namespace: string, name: string, resources: object): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: { nodeName: NODE_NAME, terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: 'busybox:1.35', command: ['sleep', '3600'], resources }] },
  };
}

describe('OOM score adjustment by QoS', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-oom');
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('sets -997 for Guaranteed, 1000 for BestEffort and the request share for Burstable, in the kernel and the OCI spec', async (t) => {
    // The agent runs on this machine: the node's memory is this machine's.
    const burstable = 1000 - Math.trunc((1000 * 256 * MiB) / os.totalmem());
    const cases: [string, object, number][] = [
      ['guaranteed', { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } }, -997],
      ['besteffort', {}, 1000],
      ['burstable', { requests: { memory: '256Mi' } }, burstable],
    ];
    for (const [name, resources] of cases) await apply(sleeper(namespace, name, resources));
    const seen: string[] = [];
    for (const [name, , want] of cases) {
      const pod = await eventually(`${name} to run`, async () => {
        const p = await getPod(namespace, name);
        return p?.status?.containerStatuses?.[0]?.state?.running !== undefined ? p : undefined;
      });
      const containers = await runtimeContainers(pod.metadata?.uid ?? '');
      assert.equal(containers.length, 1, `${name}: one container`);
      const id = containers[0]!.id;
      const kernel = Number((await crictl(['exec', id, 'cat', '/proc/1/oom_score_adj'])).trim());
      const spec = JSON.parse(await crictl(['inspect', id])) as { info?: { runtimeSpec?: { process?: { oomScoreAdj?: number } } } };
      assert.equal(kernel, want, `${name}: /proc/1/oom_score_adj`);
      assert.equal(spec.info?.runtimeSpec?.process?.oomScoreAdj, want, `${name}: the OCI spec`);
      assert.equal(pod.status?.qosClass, name === 'guaranteed' ? 'Guaranteed' : name === 'besteffort' ? 'BestEffort' : 'Burstable');
      seen.push(`${name} ${kernel}`);
    }
    t.diagnostic(`oom_score_adj: ${seen.join(', ')} (node memory ${Math.round(os.totalmem() / MiB)} MiB)`);
  });
});
