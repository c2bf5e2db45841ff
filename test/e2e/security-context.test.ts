/**
 * End to end: the security context as the container really sees it on the nodelet node (each
 * container prints what it sees into its termination message, read back from the API), the
 * kubelet's runAsNonRoot check, and sysctl / AppArmor admission (pod Failed, nothing in the
 * runtime).
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1Container, V1Node, V1Pod } from '@kubernetes/client-node';
import { NODE_NAME, apply, containersOf, createNamespace, crictl, deleteNamespace, eventually, getPod, kubectl, podEvents, requireCluster, sandboxesOf } from './helpers.js';

/** Prints the lines of /proc/self/status the tests look at, then what the script adds. */
const STATUS = "grep -E '^(Uid|Gid|Groups|CapEff|Seccomp):' /proc/self/status";

function container(name: string, script: string, securityContext?: object): V1Container {
  return { name, image: 'busybox:1.35', command: ['sh', '-c', `(${script}) > /dev/termination-log 2>&1`], ...(securityContext === undefined ? {} : { securityContext }) };
}

function pod(namespace: string, name: string, spec: { containers: V1Container[]; securityContext?: object; hostNetwork?: boolean; annotations?: Record<string, string> }): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, ...(spec.annotations === undefined ? {} : { annotations: spec.annotations }) },
    spec: {
      nodeName: NODE_NAME,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      ...(spec.hostNetwork === undefined ? {} : { hostNetwork: spec.hostNetwork }),
      ...(spec.securityContext === undefined ? {} : { securityContext: spec.securityContext }),
      containers: spec.containers,
    },
  };
}

async function finished(namespace: string, name: string): Promise<V1Pod> {
  return eventually(`pod ${name} finished`, async () => {
    const p = await getPod(namespace, name);
    return p?.status?.phase === 'Succeeded' || p?.status?.phase === 'Failed' ? p : undefined;
  });
}

/** The termination message of a container of a finished pod: what it printed. */
function printed(p: V1Pod, name: string): string {
  const terminated = p.status?.containerStatuses?.find((c) => c.name === name)?.state?.terminated;
  assert.ok(terminated !== undefined, `container ${name} did not terminate: ${JSON.stringify(p.status?.containerStatuses)}`);
  return terminated.message ?? '';
}

/** The value of a `Key:\tvalue` (/proc/self/status) or `key=value` (the scripts' own) line, spaces collapsed. */
function field(text: string, key: string): string {
  const line = text.split('\n').find((l) => l.startsWith(`${key}:`) || l.startsWith(`${key}=`));
  assert.ok(line !== undefined, `no ${key} line in:\n${text}`);
  return line.slice(key.length + 1).trim().replace(/\s+/g, ' ');
}

describe('the security context on the nodelet node', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-secctx');
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('masks /proc paths, mounts /proc/sys read-only, and runs unconfined by seccomp when no profile is asked for', async () => {
    const script = `${STATUS}; echo "timer_list=$(wc -c < /proc/timer_list)"; echo "interrupts=$(wc -c < /proc/interrupts)"; grep ' /proc/sys ' /proc/mounts; echo 1 > /proc/sys/kernel/shm_rmid_forced && echo sys-write=ok || echo sys-write=refused`;
    await apply(pod(namespace, 'defaults', { containers: [container('main', script)] }));
    const out = printed(await finished(namespace, 'defaults'), 'main');
    console.log(`[defaults] container saw:\n${out}`);
    assert.equal(field(out, 'Seccomp'), '0', 'no profile: Unconfined (the kubelet default without SeccompDefault)');
    assert.equal(field(out, 'timer_list'), '0', '/proc/timer_list is masked (readable on the host)');
    assert.equal(field(out, 'interrupts'), '0', '/proc/interrupts is masked');
    assert.match(out, /^proc \/proc\/sys proc ro[,\s]/m, '/proc/sys is mounted read-only');
    assert.match(out, /sys-write=refused/);
    assert.equal(field(out, 'Uid'), '0 0 0 0', 'busybox runs as root');
    assert.notEqual(field(out, 'CapEff'), '0000000000000000', "root keeps the runtime's default capabilities");
  });

  it('applies RuntimeDefault seccomp from the pod, a container Unconfined override, uid/gid/groups, dropped capabilities and a read-only root filesystem', async () => {
    await apply(pod(namespace, 'confined', {
      securityContext: { seccompProfile: { type: 'RuntimeDefault' }, runAsUser: 1234, runAsGroup: 5678, fsGroup: 2000, supplementalGroups: [3000] },
      containers: [
        container('filtered', `${STATUS}; touch /rootfs-write && echo rootfs-write=ok || echo rootfs-write=refused`, { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false }),
        // Root, so that an empty CapEff proves the drop (a non-root user has none anyway).
        container('capless', STATUS, { runAsUser: 0, capabilities: { drop: ['ALL'] } }),
        container('unconfined', STATUS, { seccompProfile: { type: 'Unconfined' }, runAsUser: 4321 }),
      ],
    }));
    const done = await finished(namespace, 'confined');
    const filtered = printed(done, 'filtered');
    const capless = printed(done, 'capless');
    const unconfined = printed(done, 'unconfined');
    console.log(`[confined] filtered saw:\n${filtered}\n[confined] capless saw:\n${capless}\n[confined] unconfined saw:\n${unconfined}`);
    assert.equal(field(filtered, 'Seccomp'), '2', 'pod RuntimeDefault: filtered');
    assert.equal(field(unconfined, 'Seccomp'), '0', 'container Unconfined overrides the pod');
    assert.equal(field(filtered, 'Uid'), '1234 1234 1234 1234');
    assert.equal(field(filtered, 'Gid'), '5678 5678 5678 5678');
    // The runtime adds the primary group (runAsGroup) to the list as well.
    assert.deepEqual(field(filtered, 'Groups').split(' ').sort(), ['2000', '3000', '5678'], 'fsGroup, supplementalGroups and runAsGroup');
    assert.match(filtered, /rootfs-write=refused/);
    assert.equal(field(capless, 'Uid'), '0 0 0 0');
    assert.equal(field(capless, 'CapEff'), '0000000000000000', 'capabilities dropped');
    assert.equal(field(unconfined, 'Uid'), '4321 4321 4321 4321', "the container's runAsUser overrides the pod's");
  });

  it("runs supplementalGroupsPolicy Strict where the runtime enforces it, and reports the first process's user in the status as the kernel shows it", async () => {
    const node = JSON.parse(await kubectl(['get', 'node', NODE_NAME, '-o', 'json'])) as V1Node;
    assert.equal(node.status?.features?.supplementalGroupsPolicy, true, "the Node says its runtime enforces the policy (containerd 2's CRI feature)");
    await apply(pod(namespace, 'strict-groups', {
      securityContext: { runAsUser: 1234, runAsGroup: 5678, supplementalGroups: [3000], supplementalGroupsPolicy: 'Strict' },
      containers: [container('main', STATUS)],
    }));
    const done = await finished(namespace, 'strict-groups');
    const out = printed(done, 'main');
    assert.equal(done.status?.phase, 'Succeeded');
    const kernelGroups = field(out, 'Groups').split(' ').map(Number).sort((a, b) => a - b);
    const user = done.status?.containerStatuses?.[0]?.user?.linux;
    console.log(`[strict-groups] kernel: Uid ${field(out, 'Uid')}, Gid ${field(out, 'Gid')}, Groups ${kernelGroups.join(' ')}; status.user: ${JSON.stringify(user)}`);
    assert.deepEqual(kernelGroups, [3000, 5678], 'only the pod’s groups and the primary group');
    assert.equal(user?.uid, 1234);
    assert.equal(user?.gid, 5678);
    assert.deepEqual([...(user?.supplementalGroups ?? [])].sort((a, b) => a - b), kernelGroups, "the status's groups are the kernel's");
  });

  it('loads a Localhost seccomp profile from <root-dir>/seccomp', async () => {
    const root = path.join(process.env.CLUSTER_DIR ?? '', 'nodelet-root', 'seccomp', 'e2e');
    await mkdir(root, { recursive: true });
    const profile = { defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names: ['mkdir', 'mkdirat'], action: 'SCMP_ACT_ERRNO' }] };
    await writeFile(path.join(root, 'no-mkdir.json'), JSON.stringify(profile));
    await apply(pod(namespace, 'localhost-profile', {
      containers: [container('main', `${STATUS}; mkdir /tmp/d && echo mkdir=ok || echo mkdir=refused`, { seccompProfile: { type: 'Localhost', localhostProfile: 'e2e/no-mkdir.json' } })],
    }));
    const out = printed(await finished(namespace, 'localhost-profile'), 'main');
    console.log(`[localhost-profile] container saw:\n${out}`);
    assert.equal(field(out, 'Seccomp'), '2');
    assert.match(out, /mkdir=refused/);
  });

  it('refuses to create a container with runAsNonRoot whose image runs as root: CreateContainerConfigError, nothing in the runtime', async () => {
    await apply(pod(namespace, 'nonroot', { securityContext: { runAsNonRoot: true }, containers: [container('main', 'id')] }));
    const waiting = await eventually('the container waits with CreateContainerConfigError', async () => {
      const p = await getPod(namespace, 'nonroot');
      const state = p?.status?.containerStatuses?.[0]?.state?.waiting;
      return state?.reason === 'CreateContainerConfigError' ? { pod: p, state } : undefined;
    });
    const uid = waiting.pod?.metadata?.uid ?? '';
    assert.equal(waiting.state.message, `container has runAsNonRoot and image will run as root (pod: "nonroot_${namespace}(${uid})", container: main)`);
    assert.equal(waiting.pod?.status?.phase, 'Pending');
    assert.deepEqual(await containersOf(uid), [], 'no container was created');
    assert.equal((await sandboxesOf(uid)).length, 1, 'the sandbox exists');
    const failed = (await podEvents(namespace, 'nonroot')).filter((e) => e.reason === 'Failed');
    assert.ok(failed.some((e) => e.message === `Error: ${waiting.state.message ?? ''}`), JSON.stringify(failed.map((e) => e.message)));
  });

  it('applies safe sysctls and an allowlisted unsafe one (--allowed-unsafe-sysctls), read back inside', async () => {
    await apply(pod(namespace, 'sysctls', {
      securityContext: {
        sysctls: [
          { name: 'net.ipv4.ip_local_port_range', value: '40000 50000' },
          { name: 'kernel.shm_rmid_forced', value: '1' },
          { name: 'kernel.msgmnb', value: '12345' },
        ],
      },
      containers: [container('main', 'echo "range=$(cat /proc/sys/net/ipv4/ip_local_port_range)"; echo "shm=$(cat /proc/sys/kernel/shm_rmid_forced)"; echo "msgmnb=$(cat /proc/sys/kernel/msgmnb)"')],
    }));
    const done = await finished(namespace, 'sysctls');
    const out = printed(done, 'main');
    console.log(`[sysctls] container saw:\n${out}`);
    assert.equal(done.status?.phase, 'Succeeded');
    assert.equal(field(out, 'range'), '40000 50000');
    assert.equal(field(out, 'shm'), '1');
    assert.equal(field(out, 'msgmnb'), '12345');
  });

  const rejections: { name: string; spec: Parameters<typeof pod>[2]; reason: string; message: string; skip?: () => Promise<boolean> }[] = [
    {
      name: 'unsafe-sysctl',
      spec: { securityContext: { sysctls: [{ name: 'net.core.somaxconn', value: '1024' }] }, containers: [container('main', 'true')] },
      reason: 'SysctlForbidden',
      message: 'forbidden sysctl: "net.core.somaxconn" not allowlisted',
    },
    // (A net.* sysctl with hostNetwork, or an IPC one with hostIPC, is refused by the API server's
    // validation already: nodelet's own check of them is covered by the unit and component tests.)
    {
      name: 'apparmor',
      spec: { containers: [container('main', 'true', { appArmorProfile: { type: 'RuntimeDefault' } })] },
      reason: 'AppArmor',
      message: 'Cannot enforce AppArmor: AppArmor is not enabled on the host',
      // The kubelet's check: securityfs has AppArmor and the module says Y.
      skip: async () => {
        try {
          const { readFile } = await import('node:fs/promises');
          return (await readFile('/sys/module/apparmor/parameters/enabled', 'utf8')).startsWith('Y');
        } catch {
          return false;
        }
      },
    },
  ];

  for (const r of rejections) {
    it(`rejects ${r.name} at admission: Failed ${r.reason}, a Warning event, zero sandboxes`, async (t) => {
      if (r.skip !== undefined && (await r.skip())) {
        t.skip('AppArmor is enabled on this host');
        return;
      }
      await apply(pod(namespace, r.name, r.spec));
      const failed = await finished(namespace, r.name);
      const uid = failed.metadata?.uid ?? '';
      assert.equal(failed.status?.phase, 'Failed');
      assert.equal(failed.status?.reason, r.reason);
      assert.equal(failed.status?.message, `Pod was rejected: ${r.message}`);
      const events = (await podEvents(namespace, r.name)).filter((e) => e.reason === r.reason);
      assert.equal(events.length, 1, JSON.stringify(events));
      assert.equal(events[0]?.type, 'Warning');
      assert.equal(events[0]?.message, r.message);
      // Give a wrongly started sandbox time to appear before counting.
      await new Promise((resolve) => setTimeout(resolve, 3000));
      assert.deepEqual(await sandboxesOf(uid), [], 'no sandbox was ever created');
      assert.deepEqual(await containersOf(uid), []);
      assert.equal((await getPod(namespace, r.name))?.status?.phase, 'Failed', 'still Failed');
      console.log(`[${r.name}] ${failed.status?.reason}: ${failed.status?.message}; sandboxes in crictl: 0`);
    });
  }

  it('leaves no container of these pods running in the runtime', async () => {
    const out = await crictl(['ps', '--label', `io.kubernetes.pod.namespace=${namespace}`, '-q']);
    // The nonroot pod has only its sandbox; every other pod finished.
    assert.equal(out.trim(), '');
  });
});
