/**
 * End to end: pod cgroups under the kubelet's QoS hierarchy, as the kernel shows them. Three pods:
 * a Burstable one with a RuntimeClass overhead, a Guaranteed one, a BestEffort one. For each: the
 * container's own `/proc/self/cgroup` (cpu and memory lines), the cgroup parent the runtime got
 * (`crictl inspectp`), the pod cgroup's files on the host (cpu.shares, cpu.cfs_quota_us,
 * memory.limit_in_bytes) in every v1 hierarchy; the QoS cgroups (besteffort 2 shares, burstable the
 * sum of the Burstable pods' requests) and kubepods (allocatable); after deletion, the pod cgroups
 * gone from every hierarchy. The agent runs on this machine with the default `--cgroup-root`.
 */
import assert from 'node:assert/strict';
import { access, readdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { NODE_NAME, apply, createNamespace, crictl, deleteNamespace, eventually, getPod, kubectl, requireCluster, runtimeContainers, runtimeSandboxes } from './helpers.js';

const MI = 2 ** 20;
const CGROUP = '/sys/fs/cgroup';

/** The v1 hierarchies the agent uses: every cgroup mount but the unified (cgroup2) one. */
async function hierarchies(): Promise<string[]> {
  const mounts = (await readFile('/proc/self/mountinfo', 'utf8')).split('\n').filter((l) => l.includes(' - cgroup '));
  return mounts.map((l) => l.split(' ')[4] ?? '').filter((m) => m.startsWith(`${CGROUP}/`));
}

async function present(p: string): Promise<boolean> {
  return access(p).then(() => true, () => false);
}

async function cgroupFile(subsystem: string, cgroup: string, file: string): Promise<string> {
  return (await readFile(path.join(CGROUP, subsystem, cgroup, file), 'utf8')).trim();
}

/** CPU requests of the node's active Burstable pods, as the QoS cgroup counts them (containers + overhead). */
async function burstableRequestsMilli(): Promise<number> {
  const pods = (JSON.parse(await kubectl(['get', 'pods', '-A', '--field-selector', `spec.nodeName=${NODE_NAME}`, '-o', 'json'])) as { items: V1Pod[] }).items;
  const milli = (q: string | undefined): number => (q === undefined ? 0 : q.endsWith('m') ? Number(q.slice(0, -1)) : Math.ceil(Number(q) * 1000));
  return pods
    .filter((p) => p.status?.qosClass === 'Burstable' && p.status.phase !== 'Succeeded' && p.status.phase !== 'Failed' && p.metadata?.deletionTimestamp === undefined)
    .reduce((sum, p) => sum + (p.spec?.containers ?? []).reduce((s, c) => s + milli(c.resources?.requests?.cpu), 0) + milli(p.spec?.overhead?.cpu), 0);
}

function sleeper(namespace: string, name: string, resources: object, runtimeClassName?: string): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName: NODE_NAME,
      terminationGracePeriodSeconds: 1,
      ...(runtimeClassName === undefined ? {} : { runtimeClassName }),
      containers: [{ name: 'main', image: 'busybox:1.35', command: ['sleep', '3600'], resources }],
    },
  };
}

interface Case {
  readonly name: string;
  readonly qos: string;
  readonly parent: string;
  /** Expected files of the pod cgroup: `<subsystem>/<file>` → value. */
  readonly files: Readonly<Record<string, string>>;
}

const CASES: readonly Case[] = [
  // 100m + 100m overhead requested → 204 shares; 300m + 100m limit → 40 ms; 64 Mi + 32 Mi.
  { name: 'burstable', qos: 'Burstable', parent: '/kubepods/burstable', files: { 'cpu/cpu.shares': '204', 'cpu/cpu.cfs_quota_us': '40000', 'memory/memory.limit_in_bytes': String(96 * MI) } },
  { name: 'guaranteed', qos: 'Guaranteed', parent: '/kubepods', files: { 'cpu/cpu.shares': '204', 'cpu/cpu.cfs_quota_us': '20000', 'memory/memory.limit_in_bytes': String(48 * MI) } },
  { name: 'besteffort', qos: 'BestEffort', parent: '/kubepods/besteffort', files: { 'cpu/cpu.shares': '2', 'cpu/cpu.cfs_quota_us': '-1' } },
];

describe('pod cgroups under the QoS hierarchy', () => {
  let namespace = '';
  // A name of its own: nodelet gives the runtime the class's handler (`runc`, the only one the
  // harness's containerd has), not its name.
  const runtimeClass = `e2e-overhead-${process.pid}`;

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-cgroups');
    await apply({ apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name: runtimeClass }, handler: 'runc', overhead: { podFixed: { cpu: '100m', memory: '32Mi' } } });
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
    await kubectl(['delete', 'runtimeclass', runtimeClass, '--ignore-not-found']);
  });

  it('puts each pod in its QoS cgroup with the kubelet values, and removes the cgroups with the pods', async (t) => {
    await apply(sleeper(namespace, 'burstable', { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '300m', memory: '64Mi' } }, runtimeClass));
    await apply(sleeper(namespace, 'guaranteed', { requests: { cpu: '200m', memory: '48Mi' }, limits: { cpu: '200m', memory: '48Mi' } }));
    await apply(sleeper(namespace, 'besteffort', {}));
    const all = await hierarchies();
    assert.ok(all.length >= 5, `v1 hierarchies: ${all.join(' ')}`);
    const seen: string[] = [];
    const podCgroups: string[] = [];
    for (const c of CASES) {
      const pod = await eventually(`${c.name} to run`, async () => {
        const p = await getPod(namespace, c.name);
        return p?.status?.containerStatuses?.[0]?.state?.running !== undefined ? p : undefined;
      });
      const uid = pod.metadata?.uid ?? '';
      const cgroup = `${c.parent}/pod${uid}`;
      podCgroups.push(cgroup);
      assert.equal(pod.status?.qosClass, c.qos);
      if (c.name === 'burstable') assert.deepEqual(pod.spec?.overhead, { cpu: '100m', memory: '32Mi' }, 'the RuntimeClass admission set the overhead');
      // The runtime was asked for the pod cgroup as the sandbox's parent.
      const sandboxes = await runtimeSandboxes(uid);
      assert.equal(sandboxes.length, 1);
      const inspected = JSON.parse(await crictl(['inspectp', sandboxes[0]!.id])) as { info?: { config?: { linux?: { cgroup_parent?: string } } } };
      assert.equal(inspected.info?.config?.linux?.cgroup_parent, cgroup, `${c.name}: crictl inspectp cgroup_parent`);
      // The container sits under it, as it sees itself.
      const containers = await runtimeContainers(uid);
      assert.equal(containers.length, 1);
      const id = containers[0]!.id;
      const own = (await crictl(['exec', id, 'cat', '/proc/self/cgroup'])).split('\n');
      for (const subsystem of ['memory', 'cpu']) {
        const line = own.find((l) => l.split(':')[1]?.split(',').includes(subsystem));
        assert.equal(line?.split(':')[2], `${cgroup}/${id}`, `${c.name}: the ${subsystem} line of /proc/self/cgroup`);
      }
      // The pod cgroup exists in every hierarchy, with the kubelet's values.
      for (const h of all) assert.ok(await present(path.join(h, cgroup)), `${c.name}: ${cgroup} in ${h}`);
      for (const [file, want] of Object.entries(c.files)) {
        const [subsystem = '', name = ''] = file.split('/');
        assert.equal(await cgroupFile(subsystem, cgroup, name), want, `${c.name}: ${file}`);
      }
      seen.push(`${c.name}: ${cgroup} ${Object.keys(c.files).map((f) => `${f}=${c.files[f]}`).join(' ')}`);
    }
    // The QoS cgroups and the node root.
    assert.equal(await cgroupFile('cpu', '/kubepods/besteffort', 'cpu.shares'), '2');
    const burstableShares = await eventually('the burstable QoS shares to count the Burstable pods', async () => {
      const want = Math.max(2, Math.floor((await burstableRequestsMilli()) * 1.024));
      const got = await cgroupFile('cpu', '/kubepods/burstable', 'cpu.shares');
      return got === String(want) ? got : undefined;
    }, 30_000);
    assert.equal(await cgroupFile('cpu', '/kubepods', 'cpu.shares'), String(os.cpus().length * 1024));
    const kubepodsMemory = Number(await cgroupFile('memory', '/kubepods', 'memory.limit_in_bytes'));
    // No reservations in the harness: all of the machine's memory (the kernel rounds to pages).
    assert.ok(kubepodsMemory <= os.totalmem() && kubepodsMemory > os.totalmem() - 4096 * 2, `kubepods memory ${kubepodsMemory} vs total ${os.totalmem()}`);
    t.diagnostic(`${seen.join('; ')}; burstable QoS cpu.shares=${burstableShares}; kubepods memory.limit_in_bytes=${kubepodsMemory} (node memory ${os.totalmem()}); hierarchies ${all.length}`);

    await kubectl(['delete', 'pod', '-n', namespace, '--all', '--wait=true', '--timeout=90s']);
    for (const cgroup of podCgroups) {
      await eventually(`${cgroup} to be gone from every hierarchy`, async () => {
        const left = (await Promise.all(all.map(async (h) => ((await present(path.join(h, cgroup))) ? h : '')))).filter((h) => h !== '');
        return left.length === 0 ? true : undefined;
      }, 30_000);
    }
    const leftPods = (await Promise.all(all.map(async (h) => (await readdir(path.join(h, 'kubepods', 'burstable'))).filter((d) => podCgroups.some((c) => c.endsWith(d)))))).flat();
    assert.deepEqual(leftPods, []);
  });
});
