/**
 * End to end: `seLinuxOptions` reach the runtime as the kubelet sends them (pod level to the
 * sandbox and the containers, a container level in its place). The test host has no SELinux, so
 * containerd validates the level and records the options in the config it received, but labels
 * nothing — exactly what it does under the kubelet. Asserted from crictl (inspectp / inspect:
 * `info.config.linux.security_context.selinux_options`) and the API (the pod runs its containers).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { NODE_NAME, apply, createNamespace, crictl, deleteNamespace, eventually, getPod, requireCluster, sandboxesOf } from './helpers.js';

interface SELinux {
  user?: string;
  role?: string;
  type?: string;
  level?: string;
}

interface Inspected {
  info?: { config?: { metadata?: { name?: string }; linux?: { security_context?: { selinux_options?: SELinux } } } };
}

describe('seLinuxOptions', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-selinux');
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('passes the pod and container options to the runtime through the CRI', async () => {
    console.log(`SELinux on this host: ${existsSync('/sys/fs/selinux') ? 'present' : 'absent (the runtime records the options and labels nothing)'}`);
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'labelled', namespace },
      spec: {
        nodeName: NODE_NAME,
        restartPolicy: 'Never',
        terminationGracePeriodSeconds: 1,
        securityContext: { seLinuxOptions: { user: 'system_u', role: 'system_r', type: 'container_t', level: 's0:c1,c2' } },
        containers: [
          { name: 'pod-level', image: 'busybox:1.35', command: ['sleep', '3600'] },
          { name: 'own-level', image: 'busybox:1.35', command: ['sleep', '3600'], securityContext: { seLinuxOptions: { level: 's0:c7,c8' } } },
        ],
      },
    });
    const running = await eventually('both containers running', async () => {
      const p = await getPod(namespace, 'labelled');
      return (p?.status?.containerStatuses ?? []).filter((c) => c.state?.running !== undefined).length === 2 ? p : undefined;
    });
    const uid = running.metadata?.uid ?? '';
    const [sandbox] = await sandboxesOf(uid);
    assert.ok(sandbox !== undefined, 'the sandbox is in the runtime');
    const sandboxInfo = JSON.parse(await crictl(['inspectp', '-o', 'json', sandbox])) as Inspected;
    assert.deepEqual(sandboxInfo.info?.config?.linux?.security_context?.selinux_options, { user: 'system_u', role: 'system_r', type: 'container_t', level: 's0:c1,c2' });
    const ids = (await crictl(['ps', '-a', '-q', '--label', `io.kubernetes.pod.uid=${uid}`])).split('\n').filter((l) => l !== '');
    assert.equal(ids.length, 2);
    const byName = new Map<string, SELinux | undefined>();
    for (const id of ids) {
      const c = JSON.parse(await crictl(['inspect', '-o', 'json', id])) as Inspected;
      byName.set(c.info?.config?.metadata?.name ?? '', c.info?.config?.linux?.security_context?.selinux_options);
    }
    assert.deepEqual(byName.get('pod-level'), { user: 'system_u', role: 'system_r', type: 'container_t', level: 's0:c1,c2' });
    // Container options replace the pod's as a whole; crictl leaves empty fields out.
    assert.equal(byName.get('own-level')?.level, 's0:c7,c8');
    assert.equal(byName.get('own-level')?.type ?? '', '');
  });
});
