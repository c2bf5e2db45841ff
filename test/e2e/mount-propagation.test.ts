/**
 * End to end: mount propagation between containers through an emptyDir, as the kubelet's
 * MountPropagation tests exercise it. A privileged container with `Bidirectional` mounts a tmpfs
 * inside the volume; a container with `HostToContainer` sees it, one with `None` does not, and the
 * host sees it under the pod's volume directory. That needs the agent's root directory on a shared
 * mount (the kubelet bind-mounts it onto itself and makes it rshared at start): without it the
 * runtime refuses the Bidirectional mount ("is mounted on / but it is not a shared mount").
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isSharedMount, mountContaining, parseMountInfo } from '../../util/mountinfo.js';
import { NODE_NAME, apply, containerStatusOf, createNamespace, deleteNamespace, eventually, hostMountsUnder, kubectl, requireCluster, waitForPhase } from './helpers.js';

const ROOT_DIR = path.join(process.env.CLUSTER_DIR ?? '', 'nodelet-root');

/** Whether `dir` lies on a shared mount in the agent host's table (the mount the agent's own check reads). */
async function onSharedMount(dir: string): Promise<boolean> {
  const holder = mountContaining(parseMountInfo(await readFile('/proc/self/mountinfo', 'utf8')), dir);
  return holder !== undefined && isSharedMount(holder);
}

describe('mount propagation (mountPropagation: Bidirectional, HostToContainer, None)', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-propagation');
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it("propagates a container's mount to its sibling with HostToContainer and to the host, not to one with None; gone from the host with the pod", async () => {
    assert.ok(await onSharedMount(ROOT_DIR), `the agent's root ${ROOT_DIR} lies on a shared mount`);
    // The mount is made only once both readers run: a container created after it would get it in
    // its own (recursive) bind of the volume whatever its propagation; only propagation carries a
    // later one.
    const mounter = 'until [ -f /shared/slave-up ] && [ -f /shared/private-up ]; do sleep 0.2; done; mkdir -p /shared/sub && mount -t tmpfs e2e-propagation /shared/sub && echo hello > /shared/sub/file && touch /shared/ready && exec sleep 3600';
    const reader = (name: string): string => `touch /mnt/${name}-up; until [ -f /mnt/ready ]; do sleep 0.2; done; if [ -f /mnt/sub/file ]; then echo "sees $(cat /mnt/sub/file)"; else echo "sees nothing"; fi; exec sleep 3600`;
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'propagation', namespace },
      spec: {
        nodeName: NODE_NAME,
        terminationGracePeriodSeconds: 1,
        containers: [
          { name: 'mounter', image: 'busybox:1.35', command: ['sh', '-c', mounter], securityContext: { privileged: true }, volumeMounts: [{ name: 'shared', mountPath: '/shared', mountPropagation: 'Bidirectional' }] },
          { name: 'slave', image: 'busybox:1.35', command: ['sh', '-c', reader('slave')], volumeMounts: [{ name: 'shared', mountPath: '/mnt', mountPropagation: 'HostToContainer' }] },
          { name: 'private', image: 'busybox:1.35', command: ['sh', '-c', reader('private')], volumeMounts: [{ name: 'shared', mountPath: '/mnt' }] },
        ],
        volumes: [{ name: 'shared', emptyDir: {} }],
      },
    });
    const pod = await waitForPhase(namespace, 'propagation', 'Running', 90_000);
    assert.deepEqual(['mounter', 'slave', 'private'].map((c) => containerStatusOf(pod, c)?.state?.running !== undefined), [true, true, true]);
    const uid = pod.metadata?.uid ?? '';
    const logOf = (c: string): Promise<string> => eventually(`${c}'s answer`, async () => {
      const text = (await kubectl(['logs', '-n', namespace, 'propagation', '-c', c]).catch(() => '')).trim();
      return text === '' ? undefined : text;
    });
    assert.equal(await logOf('slave'), 'sees hello');
    assert.equal(await logOf('private'), 'sees nothing');
    const volume = path.join(ROOT_DIR, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'shared');
    assert.deepEqual(await hostMountsUnder(path.join(volume, 'sub')), [path.join(volume, 'sub')], 'the host sees the container\'s tmpfs in the pod\'s volume');
    await kubectl(['delete', 'pod', '-n', namespace, 'propagation', '--wait=true', '--timeout=90s']);
    await eventually('the propagated mount gone from the host', async () => ((await hostMountsUnder(path.join(ROOT_DIR, 'pods', uid))).length === 0 ? true : undefined), 60_000);
  });
});
