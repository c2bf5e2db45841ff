/**
 * The security context and admission through the assembled per-pod machinery, against the
 * recording fake runtime: what the sandbox and container configs carry when sent, runAsNonRoot
 * refusing a root image before anything is created, and pods rejected at admission (Failed with
 * the kubelet's reason, one Warning event, never a sandbox).
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import type { ContainerConfig, PodSandboxConfig } from '../../cri/types.js';
import { createReconcilerHarness, ref, type ReconcilerHarness } from '../../test/doubles/reconciler-harness.js';
import { basePod, UID } from '../../test/doubles/pod-fixtures.js';
import { defaultPodSecurity } from './pod-sync.js';
import { DEFAULT_MASKED_PATHS, DEFAULT_READONLY_PATHS } from '../container/security-context.js';

let h: ReconcilerHarness | undefined;

afterEach(async () => {
  await h?.cleanup();
  h = undefined;
});

async function harness(allowedUnsafeSysctls: readonly string[] = []): Promise<ReconcilerHarness> {
  h = await createReconcilerHarness({ security: { ...defaultPodSecurity('/var/lib/nodelet'), allowedUnsafeSysctls } });
  return h;
}

function sentSandbox(t: ReconcilerHarness): PodSandboxConfig {
  const calls = t.runtime.callsTo('runPodSandbox');
  assert.equal(calls.length, 1);
  return calls[0]?.args[0] as PodSandboxConfig;
}

function sentContainer(t: ReconcilerHarness, name: string): ContainerConfig {
  const config = t.runtime.callsTo('createContainer').map((c) => c.args[1] as ContainerConfig).find((c) => c.metadata.name === name);
  assert.ok(config !== undefined, `no container ${name} was created`);
  return config;
}

describe('security context as sent to the runtime', () => {
  it('sends the sandbox RuntimeDefault seccomp, privileged for a privileged container, fsGroup and normalized sysctls', async () => {
    const t = await harness();
    t.store.set(UID, basePod((p) => {
      p.spec!.securityContext = { fsGroup: 2000, supplementalGroups: [3000], seccompProfile: { type: 'RuntimeDefault' }, sysctls: [{ name: 'net/ipv4/ip_local_port_range', value: '40000 50000' }] };
      p.spec!.containers[1]!.securityContext = { privileged: true, seccompProfile: { type: 'Unconfined' }, procMount: 'Unmasked' };
    }));
    await t.reconciler().reconcile(ref);
    const sandbox = sentSandbox(t);
    assert.equal(sandbox.linux?.securityContext?.privileged, true);
    assert.deepEqual(sandbox.linux?.securityContext?.seccomp, { profileType: 'RuntimeDefault' });
    assert.deepEqual(sandbox.linux?.securityContext?.supplementalGroups, [2000n, 3000n]);
    assert.deepEqual(sandbox.linux?.sysctls, { 'net.ipv4.ip_local_port_range': '40000 50000' });
    const app = sentContainer(t, 'app').linux?.securityContext;
    assert.deepEqual(app?.seccomp, { profileType: 'RuntimeDefault' }, "the pod's profile");
    assert.deepEqual(app?.maskedPaths, [...DEFAULT_MASKED_PATHS]);
    assert.deepEqual(app?.readonlyPaths, [...DEFAULT_READONLY_PATHS]);
    assert.equal(app?.runAsUser, 0n, "the image's user (busybox: none, so root)");
    assert.deepEqual(app?.supplementalGroups, [2000n, 3000n]);
    const sidecar = sentContainer(t, 'sidecar').linux?.securityContext;
    assert.equal(sidecar?.privileged, true);
    assert.deepEqual(sidecar?.seccomp, { profileType: 'Unconfined' }, "the container's profile wins");
    assert.deepEqual([sidecar?.maskedPaths, sidecar?.readonlyPaths], [[], []], 'procMount Unmasked');
    assert.equal(t.status.last()?.phase, 'Running');
  });

  it('sends a numeric image user as run_as_user and a named one as run_as_username', async () => {
    const t = await harness();
    t.runtime.addImage('registry.local/app:1', { uid: 1000n });
    t.runtime.addImage('registry.local/named:1', { username: 'nobody' });
    t.store.set(UID, basePod((p) => {
      p.spec!.containers[0]!.image = 'registry.local/app:1';
      p.spec!.containers[1]!.image = 'registry.local/named:1';
    }));
    await t.reconciler().reconcile(ref);
    assert.equal(sentContainer(t, 'app').linux?.securityContext?.runAsUser, 1000n);
    const named = sentContainer(t, 'sidecar').linux?.securityContext;
    assert.deepEqual([named?.runAsUser, named?.runAsUsername], [undefined, 'nobody']);
  });
});

describe('runAsNonRoot', () => {
  it('refuses a container whose image runs as root: CreateContainerConfigError, an event, nothing created', async () => {
    const t = await harness();
    t.runtime.addImage('registry.local/nonroot:1', { uid: 1000n });
    t.store.set(UID, basePod((p) => {
      p.spec!.securityContext = { runAsNonRoot: true };
      p.spec!.containers[1]!.image = 'registry.local/nonroot:1';
    }));
    await assert.rejects(t.reconciler().reconcile(ref), (e: unknown) => e instanceof Error && e.name === 'ContainerStartError');
    const message = 'container has runAsNonRoot and image will run as root (pod: "web_default(uid-1)", container: app)';
    const app = t.status.last()?.containerStatuses?.find((c) => c.name === 'app');
    assert.deepEqual(app?.state?.waiting, { reason: 'CreateContainerConfigError', message });
    assert.deepEqual(t.runtime.callsTo('createContainer').map((c) => (c.args[1] as ContainerConfig).metadata.name), ['sidecar'], 'only the non-root image started');
    assert.ok(t.events.events.some((e) => e.reason === 'Failed' && e.message === `Error: ${message}`), JSON.stringify(t.events.events));
  });

  it('checks the user of a present image from the one ImageStatus that found it, and of a pulled image from a new ImageStatus', async () => {
    const t = await harness();
    t.runtime.addImage('registry.local/nonroot:1', { uid: 1000n });
    t.store.set(UID, basePod((p) => {
      p.spec!.securityContext = { runAsNonRoot: true };
      p.spec!.containers[0]!.image = 'registry.local/pulled-as-root:1';
      p.spec!.containers[0]!.imagePullPolicy = 'Always';
      p.spec!.containers[1]!.image = 'registry.local/nonroot:1';
    }));
    await assert.rejects(t.reconciler().reconcile(ref), (e: unknown) => e instanceof Error && e.name === 'ContainerStartError');
    const asked = t.runtime.callsTo('imageStatus').map((c) => (c.args[0] as { image: string }).image);
    assert.equal(t.runtime.callsTo('pullImage').length, 1);
    assert.equal(asked.length, 2, `ImageStatus asked for ${JSON.stringify(asked)}`);
    assert.match(asked[0] ?? '', /^sha256:/, 'app: the user of the image it pulled, by the ID the pull returned');
    assert.equal(asked[1], 'registry.local/nonroot:1', 'sidecar: one presence check, whose answer gives the user too');
    assert.equal(t.status.last()?.containerStatuses?.find((c) => c.name === 'app')?.state?.waiting?.reason, 'CreateContainerConfigError', 'the pulled image runs as root: refused');
    assert.deepEqual(t.runtime.callsTo('createContainer').map((c) => (c.args[1] as ContainerConfig).metadata.name), ['sidecar'], 'the present non-root image started');
  });
});

describe('admission', () => {
  function unsafeSysctlPod(mutate?: (p: V1Pod) => void): V1Pod {
    return basePod((p) => {
      p.spec!.securityContext = { sysctls: [{ name: 'net.core.somaxconn', value: '1024' }] };
      mutate?.(p);
    });
  }

  it('rejects an unsafe sysctl: Failed SysctlForbidden with the kubelet message, one Warning event, never a sandbox', async () => {
    const t = await harness();
    t.store.set(UID, unsafeSysctlPod());
    assert.deepEqual(await t.reconciler().reconcile(ref), {});
    await t.reconciler().reconcile(ref);
    t.restartAgent();
    await t.reconciler().reconcile(ref);
    assert.equal(t.runtime.callsTo('runPodSandbox').length, 0);
    assert.equal(t.runtime.callsTo('pullImage').length + t.runtime.callsTo('createContainer').length, 0);
    const status = t.status.last();
    assert.equal(status?.phase, 'Failed');
    assert.equal(status?.reason, 'SysctlForbidden');
    assert.equal(status?.message, 'Pod was rejected: forbidden sysctl: "net.core.somaxconn" not allowlisted');
    assert.ok(t.status.statuses.every((s) => s.phase === 'Failed'), 'never reported as anything but Failed');
    const warnings = t.events.events.filter((e) => e.reason === 'SysctlForbidden');
    assert.deepEqual(warnings.map((e) => [e.type, e.message]), [['Warning', 'forbidden sysctl: "net.core.somaxconn" not allowlisted']], 'recorded once, across reconciles and an agent restart');
  });

  it('keeps a rejected pod terminated in the lifecycle kernel before the API shows Failed', async () => {
    const t = await harness();
    t.store.set(UID, unsafeSysctlPod());
    await t.reconciler().reconcile(ref);
    assert.equal(t.sync().lifecycle.get(UID)?.phase, 'terminated');
    // The informer has not delivered the Failed status yet: the pod is still Pending in the store.
    t.store.set(UID, unsafeSysctlPod());
    await t.reconciler().reconcile(ref);
    assert.equal(t.runtime.callsTo('runPodSandbox').length, 0);
    assert.equal(t.status.last()?.phase, 'Failed');
    assert.equal(t.status.last()?.reason, 'SysctlForbidden');
  });

  it('admits an unsafe sysctl allowed by --allowed-unsafe-sysctls', async () => {
    const t = await harness(['net.core.*']);
    t.store.set(UID, unsafeSysctlPod());
    await t.reconciler().reconcile(ref);
    assert.deepEqual(sentSandbox(t).linux?.sysctls, { 'net.core.somaxconn': '1024' });
    assert.equal(t.status.last()?.phase, 'Running');
  });

  it('rejects a net sysctl for a hostNetwork pod', async () => {
    const t = await harness(['net.core.*']);
    t.store.set(UID, unsafeSysctlPod((p) => (p.spec!.hostNetwork = true)));
    await t.reconciler().reconcile(ref);
    assert.equal(t.runtime.callsTo('runPodSandbox').length, 0);
    assert.equal(t.status.last()?.message, 'Pod was rejected: forbidden sysctl: "net.core.somaxconn" not allowed with host Net enabled');
  });

  it('rejects an AppArmor profile on a host without AppArmor', async () => {
    const t = await harness();
    t.store.set(UID, basePod((p) => (p.spec!.containers[0]!.securityContext = { appArmorProfile: { type: 'RuntimeDefault' } })));
    await t.reconciler().reconcile(ref);
    assert.equal(t.runtime.callsTo('runPodSandbox').length, 0);
    assert.deepEqual([t.status.last()?.phase, t.status.last()?.reason, t.status.last()?.message], ['Failed', 'AppArmor', 'Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host']);
    assert.deepEqual(t.events.reasons(), ['AppArmor']);
  });

  it('still deletes a rejected pod', async () => {
    const t = await harness();
    t.store.set(UID, unsafeSysctlPod());
    await t.reconciler().reconcile(ref);
    t.store.set(UID, { ...unsafeSysctlPod((p) => { p.metadata!.deletionTimestamp = new Date(); p.metadata!.deletionGracePeriodSeconds = 0; }), status: t.status.last() });
    await t.reconciler().reconcile(ref);
    assert.deepEqual(t.status.deleted, [UID]);
    assert.equal(t.runtime.callsTo('runPodSandbox').length, 0);
  });
});

describe('seLinuxOptions', () => {
  it('sends the pod level to the sandbox and every container, a container level in its place, as a whole', async () => {
    const t = await harness();
    t.store.set(UID, basePod((p) => {
      p.spec!.securityContext = { seLinuxOptions: { user: 'system_u', role: 'system_r', type: 'container_t', level: 's0:c1,c2' } };
      p.spec!.containers[1]!.securityContext = { seLinuxOptions: { level: 's0:c7,c8' } };
    }));
    await t.reconciler().reconcile(ref);
    assert.deepEqual(sentSandbox(t).linux?.securityContext?.selinuxOptions, { user: 'system_u', role: 'system_r', type: 'container_t', level: 's0:c1,c2' });
    assert.deepEqual(sentContainer(t, 'app').linux?.securityContext?.selinuxOptions, { user: 'system_u', role: 'system_r', type: 'container_t', level: 's0:c1,c2' });
    // The container's options replace the pod's whole (the kubelet's DetermineEffectiveSecurityContext).
    assert.deepEqual(sentContainer(t, 'sidecar').linux?.securityContext?.selinuxOptions, { user: '', role: '', type: '', level: 's0:c7,c8' });
  });

  it('sends none when nothing asks for them', async () => {
    const t = await harness();
    t.store.set(UID, basePod());
    await t.reconciler().reconcile(ref);
    assert.equal(sentSandbox(t).linux?.securityContext?.selinuxOptions, undefined);
    assert.equal(sentContainer(t, 'app').linux?.securityContext?.selinuxOptions, undefined);
  });
});
