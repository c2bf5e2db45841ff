/**
 * End to end: each container's OOM score adjustment by QoS, as the kubelet sets it: what the
 * runtime was asked for (`crictl inspect`: the CRI config containerd received) and what the kernel
 * applies (`/proc/1/oom_score_adj` inside the running container). This VM denies CAP_SYS_RESOURCE,
 * so the harness's containerd runs with `restrict_oom_score_adj` and raises a requested score below
 * its own to its own (as it would for the kubelet): the kernel shows max(requested, containerd's).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
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
    const containerdPid = (await readFile(path.join(process.env.CLUSTER_DIR ?? '', 'pids', 'containerd.pid'), 'utf8')).split('\n')[0]?.trim() ?? '';
    const floor = Number((await readFile(`/proc/${containerdPid}/oom_score_adj`, 'utf8')).trim());
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
      const inspected = JSON.parse(await crictl(['inspect', id])) as { info?: { config?: { linux?: { resources?: { oom_score_adj?: number } } } } };
      assert.equal(inspected.info?.config?.linux?.resources?.oom_score_adj, want, `${name}: the score nodelet asked the runtime for`);
      assert.equal(kernel, Math.max(want, floor), `${name}: /proc/1/oom_score_adj (restricted to containerd's ${floor})`);
      assert.equal(pod.status?.qosClass, name === 'guaranteed' ? 'Guaranteed' : name === 'besteffort' ? 'BestEffort' : 'Burstable');
      seen.push(`${name} ${kernel}`);
    }
    t.diagnostic(`oom_score_adj in the kernel: ${seen.join(', ')} (containerd's own ${floor}; node memory ${Math.round(os.totalmem() / MiB)} MiB)`);
  });
});
