/**
 * End to end: parts of the pod spec beyond the lifecycle, as the container sees them and as the
 * API reports them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { NODE_NAME, apply, createNamespace, crictl, deleteNamespace, eventually, getPod, hostMountsUnder, kubectl, requireCluster } from './helpers.js';

describe('the pod spec on the nodelet node', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-spec');
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('lets a container running as a non-root user write its termination message', async () => {
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'nonroot-message', namespace },
      spec: {
        nodeName: NODE_NAME,
        restartPolicy: 'Never',
        securityContext: { runAsUser: 1001, runAsGroup: 1001 },
        containers: [{ name: 'main', image: 'busybox:1.35', command: ['sh', '-c', 'id -u > /dev/termination-log && echo written-as-nonroot >> /dev/termination-log'] }],
      },
    });
    const done = await eventually('the pod finished', async () => {
      const pod = await getPod(namespace, 'nonroot-message');
      return pod?.status?.phase === 'Succeeded' || pod?.status?.phase === 'Failed' ? pod : undefined;
    });
    const terminated = done.status?.containerStatuses?.[0]?.state?.terminated;
    assert.equal(done.status?.phase, 'Succeeded', `the write failed: ${JSON.stringify(terminated)}`);
    assert.equal(terminated?.message, '1001\nwritten-as-nonroot\n');
  });

  it('backs an emptyDir with medium Memory by a tmpfs of its sizeLimit, and unmounts it once the pod finished', async () => {
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'memory-dir', namespace },
      spec: {
        nodeName: NODE_NAME,
        restartPolicy: 'Never',
        terminationGracePeriodSeconds: 1,
        volumes: [{ name: 'cache', emptyDir: { medium: 'Memory', sizeLimit: '16Mi' } }],
        containers: [{
          name: 'main',
          image: 'busybox:1.35',
          volumeMounts: [{ name: 'cache', mountPath: '/cache' }],
          // The mount as the container sees it, then a write past the limit (which must fail).
          command: ['sh', '-c', 'grep " /cache " /proc/mounts > /dev/termination-log; stat -c mode=%a /cache >> /dev/termination-log; if dd if=/dev/zero of=/cache/big bs=1M count=20 2>/dev/null; then echo wrote-20MiB >> /dev/termination-log; else echo full >> /dev/termination-log; fi'],
        }],
      },
    });
    const done = await eventually('the pod finished', async () => {
      const pod = await getPod(namespace, 'memory-dir');
      return pod?.status?.phase === 'Succeeded' || pod?.status?.phase === 'Failed' ? pod : undefined;
    });
    const message = done.status?.containerStatuses?.[0]?.state?.terminated?.message ?? '';
    assert.match(message, /^tmpfs \/cache tmpfs rw,.*size=16384k/, message);
    assert.match(message, /\nmode=1777\n/, 'the tmpfs root is the kubelet\'s: tmpfs\'s own 1777 (sticky)');
    assert.match(message, /\nfull\n$/, 'a write past sizeLimit fails');
    const uid = done.metadata?.uid ?? '';
    const agentRoot = path.join(process.env.CLUSTER_DIR ?? '', 'nodelet-root');
    // As the kubelet's SyncTerminatedPod, a finished pod's volumes are torn down while its object
    // remains (test/e2e/terminated-pods.test.ts); its directory goes with the object.
    await eventually('the tmpfs unmounted once the pod finished', async () => ((await hostMountsUnder(path.join(agentRoot, 'pods', uid))).length === 0 ? true : undefined), 20_000);
    const podDir = path.join(agentRoot, 'pods', uid);
    assert.ok(existsSync(podDir), 'the finished pod keeps its directory while its object exists');
    await kubectl(['delete', 'pod', 'memory-dir', '-n', namespace, '--wait=true', '--timeout=60s']);
    await eventually('the pod directory removed after the pod went', () => Promise.resolve(existsSync(podDir) ? undefined : true), 30_000);
    assert.equal((await crictl(['pods', '-q', '--label', `io.kubernetes.pod.uid=${uid}`])).trim(), '', 'nothing of the pod left in the runtime');
  });
});
