/**
 * Device plugins end to end, with upstream's sample device plugin of the cluster's release
 * (`k8s.io/kubernetes/test/images/sample-device-plugin`, built by `test/cluster/build-binaries.sh
 * --sample-device-plugin`: resource `example.com/resource`, devices Dev-1 and Dev-2, each
 * allocation a mount of `/tmp/<device>`).
 *
 * The plugin runs on the host as its DaemonSet's container would, in its own mount namespace
 * where the kubelet's fixed `/var/lib/kubelet/device-plugins` is nodelet's
 * `<root>/device-plugins` (a private tmpfs over /var/lib holds the mount point, so the host's
 * /var/lib is untouched). It registers on nodelet's kubelet.sock and serves from nodelet's
 * directory, exactly as with the kubelet.
 *
 * Checks: the Node's capacity and allocatable; a pod requesting the resource runs with its device
 * (the mount, seen by crictl inspect and inside the container through the API's exec); a pod
 * asking more than is free is rejected with the kubelet's UnexpectedAdmissionError and an event;
 * the pod resources API (through the agent's socket); and after an agent restart (SIGTERM, then
 * `up.sh` starts the agent again from the build in dist/) the checkpoint still names the same
 * device for the same pod, the plugin registers again, and the device is not given to a new pod
 * while the first holds it.
 *
 * Restarts the cluster's agent: run it alone (`bash test/run-suite.sh e2e test/e2e/device-plugins.test.ts`).
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { restoreHarnessAgent } from '../faults/step-kill.js';
import { stopHarnessAgent } from '../faults/harness.js';
import { apply, createNamespace, crictl, deleteNamespace, eventually, getPod, kubectl, NODE_NAME, podEvents, requireCluster, waitForPhase } from './helpers.js';

const run = promisify(execFile);
const R = 'example.com/resource';
const REPO = path.resolve(import.meta.dirname, '../..');
/** The agent's `--root-dir` (test/cluster/lib/agent.sh). */
const AGENT_ROOT = path.join(process.env.CLUSTER_DIR ?? '', 'nodelet-root');
const DEVICE_DIR = path.join(AGENT_ROOT, 'device-plugins');
const CHECKPOINT = path.join(DEVICE_DIR, 'kubelet_internal_checkpoint');

let plugin: ChildProcess | undefined;
let namespace = '';

async function sampleDevicePlugin(): Promise<string> {
  const { stdout } = await run('bash', [path.join(REPO, 'test/cluster/build-binaries.sh'), '--sample-device-plugin'], { timeout: 30 * 60_000, maxBuffer: 1 << 24 });
  return path.join(stdout.trim(), 'sample-device-plugin');
}

/** Starts the plugin in a mount namespace where /var/lib/kubelet/device-plugins is nodelet's directory. */
function startPlugin(binary: string): ChildProcess {
  const script = 'set -e; mount -t tmpfs tmpfs /var/lib; mkdir -p /var/lib/kubelet/device-plugins; mount --bind "$1" /var/lib/kubelet/device-plugins; exec env PLUGIN_SOCK_DIR=/var/lib/kubelet/device-plugins "$2"';
  const child = spawn('unshare', ['--mount', '--propagation', 'private', '--', 'bash', '-c', script, 'bash', DEVICE_DIR, binary], { stdio: ['ignore', 'inherit', 'inherit'] });
  return child;
}

/** The Node's count of the resource, and when the agent last posted its status (Ready's heartbeat, ms). */
async function nodeResources(): Promise<{ capacity?: string; allocatable?: string; postedAt: number }> {
  const node = JSON.parse(await kubectl(['get', 'node', NODE_NAME, '-o', 'json'])) as V1Node;
  const heartbeat = node.status?.conditions?.find((c) => c.type === 'Ready')?.lastHeartbeatTime;
  return { capacity: node.status?.capacity?.[R], allocatable: node.status?.allocatable?.[R], postedAt: heartbeat === undefined ? 0 : new Date(heartbeat).getTime() };
}

function devicePod(name: string, count: number): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName: NODE_NAME,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'main', image: 'busybox:1.35', command: ['sh', '-c', 'ls /tmp; sleep 3600'], resources: { limits: { [R]: String(count) }, requests: { [R]: String(count) } } }],
    },
  };
}

interface CheckpointFile {
  Data: { PodDeviceEntries: { PodUID: string; ContainerName: string; ResourceName: string; DeviceIDs: Record<string, string[]> }[]; RegisteredDevices: Record<string, string[]> };
}

async function checkpointDevices(uid: string): Promise<string[]> {
  const file = JSON.parse(await readFile(CHECKPOINT, 'utf8')) as CheckpointFile;
  return file.Data.PodDeviceEntries.filter((e) => e.PodUID === uid && e.ResourceName === R).flatMap((e) => Object.values(e.DeviceIDs).flat());
}

describe('device plugins (sample-device-plugin against the cluster agent)', { timeout: 40 * 60_000 }, () => {
  before(async () => {
    requireCluster();
    const binary = await sampleDevicePlugin();
    plugin = startPlugin(binary);
    namespace = await createNamespace('devices');
  });

  after(async () => {
    plugin?.kill('SIGTERM');
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('advertises the resource, runs a pod with its device, refuses one too many, and keeps the assignment across an agent restart', async () => {
    await eventually('the Node to advertise 2 devices', async () => {
      const r = await nodeResources();
      return r.capacity === '2' && r.allocatable === '2' ? r : undefined;
    }, 120_000);

    await apply(devicePod('holder', 1));
    const holder = await waitForPhase(namespace, 'holder', 'Running', 120_000);
    const uid = holder.metadata?.uid ?? '';
    const [device] = await checkpointDevices(uid);
    assert.ok(device === 'Dev-1' || device === 'Dev-2', `the checkpoint names the pod's device (${String(device)})`);

    // The device's mount in the runtime's view and inside the container.
    const containerId = holder.status?.containerStatuses?.[0]?.containerID?.replace(/^containerd:\/\//, '') ?? '';
    const inspect = JSON.parse(await crictl(['inspect', containerId])) as { status: { mounts: { containerPath: string; hostPath: string }[] } };
    assert.ok(inspect.status.mounts.some((m) => m.containerPath === `/tmp/${device}` && m.hostPath === `/tmp/${device}`), 'the plugin\'s mount is in the container');
    const listing = await kubectl(['exec', '-n', namespace, 'holder', '--', 'ls', '/tmp']);
    assert.match(listing, new RegExp(device));

    // Two more than the one left: the kubelet's rejection.
    await apply(devicePod('too-many', 2));
    const rejected = await waitForPhase(namespace, 'too-many', 'Failed', 60_000);
    assert.equal(rejected.status?.reason, 'UnexpectedAdmissionError');
    assert.equal(rejected.status?.message, `Pod was rejected: Allocate failed due to requested number of devices unavailable for ${R}. Requested: 2, Available: 1, which is unexpected`);
    assert.ok((await podEvents(namespace, 'too-many')).some((e) => e.reason === 'UnexpectedAdmissionError'));

    // The agent restarts: its checkpoint keeps the pod's device, the plugin registers again on the new kubelet.sock.
    await stopHarnessAgent();
    // Heartbeats have whole seconds: one at or after the next second was posted by the new agent.
    const stoppedAt = (Math.floor(Date.now() / 1000) + 1) * 1000;
    assert.deepEqual(await checkpointDevices(uid), [device]);
    await restoreHarnessAgent();
    // Until the plugin registers with the new agent its devices count 0, as under the kubelet (the
    // Node keeps the old agent's 2 until the new one posts): wait for a post that has them back.
    await eventually('the plugin to register again', async () => {
      const r = await nodeResources();
      return r.postedAt >= stoppedAt && r.allocatable === '2' ? true : undefined;
    }, 180_000);
    assert.deepEqual(await checkpointDevices(uid), [device], 'the same device after the restart');
    const again = await getPod(namespace, 'holder');
    assert.equal(again?.status?.containerStatuses?.[0]?.restartCount, 0, 'the holder kept running');

    // One device is left: a new pod gets the other one, never the holder's.
    await apply(devicePod('second', 1));
    const second = await waitForPhase(namespace, 'second', 'Running', 120_000);
    const secondDevices = await checkpointDevices(second.metadata?.uid ?? '');
    assert.equal(secondDevices.length, 1);
    assert.notEqual(secondDevices[0], device);

    // A finished pod frees its device.
    await kubectl(['delete', 'pod', '-n', namespace, 'holder', '--wait=true', '--timeout=120s']);
    await eventually('the holder\'s device to be freed', async () => ((await checkpointDevices(uid)).length === 0 ? true : undefined), 60_000);
  });

  it('answers the pod resources API on <root>/pod-resources/kubelet.sock', async () => {
    // Read with the project's own gRPC client over the socket: the device of every running pod.
    const { stdout } = await run('node', ['--import', 'tsx', '-e', `
      import('${path.join(REPO, 'test/e2e/pod-resources-client.ts')}').then((m) => m.listPodResources('${path.join(AGENT_ROOT, 'pod-resources', 'kubelet.sock')}')).then((r) => console.log(JSON.stringify(r)));
    `], { cwd: REPO, timeout: 60_000 });
    const list = JSON.parse(stdout) as { podResources: { name: string; namespace: string; containers: { devices: { resourceName: string; deviceIds: string[] }[] }[] }[] };
    const second = list.podResources.find((p) => p.namespace === namespace && p.name === 'second');
    assert.equal(second?.containers[0]?.devices[0]?.resourceName, R);
    assert.equal(second?.containers[0]?.devices[0]?.deviceIds.length, 1);
  });
});
