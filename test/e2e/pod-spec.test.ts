/**
 * End to end: parts of the pod spec beyond the lifecycle, as the container sees them and as the
 * API reports them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { NODE_NAME, apply, createNamespace, deleteNamespace, eventually, getPod, requireCluster } from './helpers.js';

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
});
