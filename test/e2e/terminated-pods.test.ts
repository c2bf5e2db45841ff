/**
 * End to end: what a pod that finished (Succeeded or Failed, its object kept) gives back to the
 * node, as the kubelet's SyncTerminatedPod does once the pod's sync reports a terminal phase:
 * its volumes are torn down (every volume directory removed, the memory-backed one unmounted)
 * while the pod directory with its termination messages stays until the pod is deleted, and
 * admission stops counting its resources, so a pod that needs them is admitted at once.
 *
 * Each finished pod is asserted from the API (phase, exit code, termination message), the runtime
 * (crictl: its one sandbox stopped, its container exited) and the host (the agent's pod directory
 * and the mount table).
 *
 * The kubelet passes the same file: with `npm run kubelet:up`, then `source .cluster/env` and
 * `NODE_NAME=<host>-kubelet CONTAINER_RUNTIME_ENDPOINT=unix://$PWD/.cluster/kubelet/containerd/state/containerd.sock
 * NODE_ROOT_DIR=$PWD/.cluster/kubelet/root node --import tsx --test test/e2e/terminated-pods.test.ts`.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { parseMilliCpu } from '../../reconcilers/model/quantity.js';
import { NODE_NAME, apply, busyboxPod, createNamespace, deleteNamespace, eventually, expectRuntime, getPod, hostMountsUnder, kubectl, podEvents, requireCluster, waitForPhase } from './helpers.js';

/**
 * The node agent's root directory. `NODE_ROOT_DIR` points the suite at another agent's, so the
 * same file runs against the kubelet (its `--root-dir`) as the reference.
 */
const AGENT_ROOT = process.env.NODE_ROOT_DIR ?? path.join(process.env.CLUSTER_DIR ?? '', 'nodelet-root');

interface PodManifest {
  spec: { dnsPolicy?: string; volumes?: object[]; containers: Record<string, unknown>[] };
}

/**
 * A busybox pod on our node running `script` once (restartPolicy Never), with the node's resolver
 * (`dnsPolicy: Default`: the harness's agent has no cluster DNS, which would warn on every pod).
 */
function oncePod(namespace: string, name: string, script: string): PodManifest {
  const pod = busyboxPod({ name, namespace, script, nodeName: NODE_NAME, restartPolicy: 'Never' }) as PodManifest;
  pod.spec.dnsPolicy = 'Default';
  return pod;
}

/** A pod that writes into two emptyDirs (disk and memory), leaves a message and exits with `exitCode`. */
function finishingPod(namespace: string, name: string, exitCode: number): PodManifest {
  const pod = oncePod(namespace, name, `echo data > /disk/f && echo data > /mem/f && echo "done ${exitCode}" > /dev/termination-log && exit ${exitCode}`);
  pod.spec.volumes = [{ name: 'disk', emptyDir: {} }, { name: 'mem', emptyDir: { medium: 'Memory' } }];
  pod.spec.containers[0] = { ...pod.spec.containers[0], volumeMounts: [{ name: 'disk', mountPath: '/disk' }, { name: 'mem', mountPath: '/mem' }] };
  return pod;
}

/**
 * The pod's volume directories (`volumes/<plugin>/<volume>`): what the kubelet's `podVolumesExist`
 * looks for before it calls a terminated pod's volumes cleaned up.
 */
async function volumeDirsOf(podDir: string): Promise<string[]> {
  const volumes = path.join(podDir, 'volumes');
  const plugins = await readdir(volumes).catch(() => []);
  const dirs = await Promise.all(plugins.map(async (plugin) => (await readdir(path.join(volumes, plugin)).catch(() => [])).map((v) => `${plugin}/${v}`)));
  return dirs.flat();
}

/** The node's allocatable CPU less the requests of every pod bound to it that has not finished. */
async function freeMilliCpu(): Promise<number> {
  const node = JSON.parse(await kubectl(['get', 'node', NODE_NAME, '-o', 'json'])) as V1Node;
  const pods = JSON.parse(await kubectl(['get', 'pods', '-A', '--field-selector', `spec.nodeName=${NODE_NAME}`, '-o', 'json'])) as { items: V1Pod[] };
  const used = pods.items
    .filter((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed')
    .flatMap((p) => p.spec?.containers ?? [])
    .reduce((sum, c) => sum + parseMilliCpu(c.resources?.requests?.cpu ?? 0), 0);
  return parseMilliCpu(node.status?.allocatable?.cpu ?? 0) - used;
}

describe('a finished pod on the node under test', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-finished');
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  for (const [name, exitCode, phase] of [['succeeds', 0, 'Succeeded'], ['fails', 3, 'Failed']] as const) {
    it(`tears down the volumes of a ${phase} pod at once and keeps its directory and termination message until it is deleted`, async () => {
      await apply(finishingPod(namespace, name, exitCode));
      const running = await eventually(`${name} to have a UID and its volumes`, async () => {
        const p = await getPod(namespace, name);
        const uid = p?.metadata?.uid ?? '';
        return uid !== '' && existsSync(path.join(AGENT_ROOT, 'pods', uid)) ? p : undefined;
      });
      const uid = running?.metadata?.uid ?? '';
      const podDir = path.join(AGENT_ROOT, 'pods', uid);
      const finished = await waitForPhase(namespace, name, phase);
      const finishedAt = Date.now();
      const terminated = finished.status?.containerStatuses?.[0]?.state?.terminated;
      assert.equal(terminated?.exitCode, exitCode);
      assert.equal(terminated?.message, `done ${exitCode}\n`);
      await eventually(`${name}'s volumes torn down`, async () => ((await volumeDirsOf(podDir)).length === 0 && (await hostMountsUnder(podDir)).length === 0 ? true : undefined), 20_000);
      const tornDownMs = Date.now() - finishedAt;
      assert.ok(existsSync(podDir), 'the pod directory stays while the pod object does');
      await expectRuntime(uid, { sandboxes: ['sandbox#0:NOTREADY'], containers: [`main#0:EXITED(${exitCode})`] });
      const later = await getPod(namespace, name);
      assert.equal(later?.status?.phase, phase, 'still finished');
      assert.equal(later?.status?.containerStatuses?.[0]?.state?.terminated?.message, `done ${exitCode}\n`, 'the termination message is still reported');
      const warnings = (await podEvents(namespace, name)).filter((e) => e.type === 'Warning');
      assert.deepEqual(warnings.map((e) => `${e.reason ?? ''}: ${e.message ?? ''}`), [], 'no warning');
      console.log(`[finished] ${name}: ${phase} seen → volumes gone (directory and mounts) within ${tornDownMs} ms (polled every 500 ms)`);
    });
  }

  it('stops counting a finished pod\'s CPU at admission: a pod that needs it is admitted at once', async () => {
    // Pods of earlier suites may still be terminating, holding their CPU: wait for them to go.
    const request = (await eventually('spare CPU on the node', async () => {
      const free = await freeMilliCpu();
      return free > 700 ? free : undefined;
    }, 60_000)) - 200;
    const resources = { requests: { cpu: `${request}m` } };
    const pod = (name: string, script: string): PodManifest => {
      const manifest = oncePod(namespace, name, script);
      manifest.spec.containers[0] = { ...manifest.spec.containers[0], resources };
      return manifest;
    };
    await apply(pod('first', 'sleep 1'));
    await waitForPhase(namespace, 'first', 'Succeeded');
    await apply(pod('second', 'sleep 3600'));
    const second = await eventually('second to run or be rejected', async () => {
      const p = await getPod(namespace, 'second');
      return p?.status?.phase === 'Running' || p?.status?.phase === 'Failed' ? p : undefined;
    });
    assert.equal(second.status?.phase, 'Running', `${second.status?.reason ?? ''}: ${second.status?.message ?? ''}`);
    await expectRuntime(second.metadata?.uid ?? '', { sandboxes: ['sandbox#0:READY'], containers: ['main#0:RUNNING'] });
    console.log(`[finished] two pods of ${request}m each, one after the other: the second admitted and Running`);
    // Give the CPU back now, not when the namespace goes: the next suite may need it.
    await kubectl(['delete', 'pod', 'second', '-n', namespace, '--grace-period=1', '--wait=true']);
  });
});
