/**
 * The admit handlers as the kubelet's: sysctl allowlist (safe list, unsafe patterns, host
 * namespaces), AppArmor on a host without it, the order of handlers. Plain data.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { admitHandlers, admitPod, isInvalidSysctlPatternError, sysctlAllowlist, type AdmitResult } from './index.js';
import { kernelAtLeast, safeSysctls } from './sysctls.js';
import { normalizeSysctlName } from '../model/sysctl-name.js';
import { APPARMOR_NOT_ENABLED } from './apparmor.js';
import { declaredFeaturesAdmitHandler, NODE_DECLARED_FEATURES, requiredNodeFeatures } from './declared-features.js';

type PodSpec = NonNullable<V1Pod['spec']>;

function pod(spec: Partial<PodSpec> = {}, extra: { annotations?: Record<string, string>; phase?: string } = {}): V1Pod {
  return {
    metadata: { name: 'web', namespace: 'default', uid: 'u1', ...(extra.annotations === undefined ? {} : { annotations: extra.annotations }) },
    spec: { containers: [{ name: 'app', image: 'busybox' }], ...spec },
    ...(extra.phase === undefined ? {} : { status: { phase: extra.phase } }),
  };
}

function withSysctls(sysctls: [string, string][], spec: Partial<PodSpec> = {}): V1Pod {
  return pod({ ...spec, securityContext: { sysctls: sysctls.map(([name, value]) => ({ name, value })) } });
}

const disabled = { enabled: false as const, error: APPARMOR_NOT_ENABLED };
const handlers = admitHandlers({ allowedUnsafeSysctls: ['kernel.msg*', 'net.core.somaxconn'], kernelVersion: '6.1.0-13-amd64', appArmor: disabled });
const node: V1Node = { metadata: { name: 'node-a', labels: { 'kubernetes.io/os': 'linux' } }, status: { allocatable: { cpu: '2', memory: '4Gi', pods: '110' } } };
const admit = (p: V1Pod): AdmitResult => admitPod(handlers, { pod: p, node, otherPods: [] });
const forbidden = (message: string): AdmitResult => ({ admit: false, reason: 'SysctlForbidden', message });

describe('sysctl admission', () => {
  const cases: { name: string; pod: V1Pod; expect: AdmitResult }[] = [
    { name: 'no sysctls', pod: pod(), expect: { admit: true } },
    { name: 'every safe sysctl', pod: withSysctls(safeSysctls('6.1').map((n) => [n, '1'])), expect: { admit: true } },
    { name: 'a safe sysctl in slash form', pod: withSysctls([['net/ipv4/ip_local_port_range', '1024 65000']]), expect: { admit: true } },
    { name: 'an unsafe sysctl not on the list', pod: withSysctls([['net.ipv4.ip_forward', '1']]), expect: forbidden('forbidden sysctl: "net.ipv4.ip_forward" not allowlisted') },
    { name: 'a non-namespaced sysctl', pod: withSysctls([['vm.swappiness', '10']]), expect: forbidden('forbidden sysctl: "vm.swappiness" not allowlisted') },
    { name: 'an unsafe sysctl allowed by name', pod: withSysctls([['net.core.somaxconn', '1024']]), expect: { admit: true } },
    { name: 'an unsafe sysctl allowed by pattern', pod: withSysctls([['kernel.msgmax', '65536']]), expect: { admit: true } },
    { name: 'the first refused sysctl is named', pod: withSysctls([['kernel.shm_rmid_forced', '1'], ['kernel.sem', '1 2 3 4'], ['vm.swappiness', '1']]), expect: forbidden('forbidden sysctl: "kernel.sem" not allowlisted') },
    { name: 'a net sysctl with hostNetwork', pod: withSysctls([['net.ipv4.ip_local_port_range', '1024 65000']], { hostNetwork: true }), expect: forbidden('forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host Net enabled') },
    { name: 'an allowed unsafe net sysctl with hostNetwork', pod: withSysctls([['net.core.somaxconn', '1024']], { hostNetwork: true }), expect: forbidden('forbidden sysctl: "net.core.somaxconn" not allowed with host Net enabled') },
    { name: 'an IPC sysctl with hostIPC', pod: withSysctls([['kernel.shm_rmid_forced', '1']], { hostIPC: true }), expect: forbidden('forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled') },
    { name: 'an IPC pattern sysctl with hostIPC', pod: withSysctls([['kernel.msgmnb', '1']], { hostIPC: true }), expect: forbidden('forbidden sysctl: "kernel.msgmnb" not allowed with host IPC enabled') },
    { name: 'an IPC sysctl with hostNetwork only', pod: withSysctls([['kernel.shm_rmid_forced', '1']], { hostNetwork: true }), expect: { admit: true } },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.deepEqual(admit(c.pod), c.expect);
    });
  }

  it('drops the safe sysctls an old kernel does not namespace', () => {
    assert.ok(!safeSysctls('4.4.0').includes('net.ipv4.tcp_keepalive_time'));
    assert.ok(safeSysctls('4.5.0').includes('net.ipv4.tcp_keepalive_time'));
    assert.ok(!safeSysctls('4.14.300').includes('net.ipv4.tcp_rmem'));
    assert.deepEqual(safeSysctls('6.18.44-fc-v669').length, 12);
    assert.ok(kernelAtLeast('5.10.0-custom', '4.15'));
    assert.ok(!kernelAtLeast('3.10', '3.16'));
  });

  it('refuses a pattern that is malformed or not namespaced, as the kubelet refuses to start', () => {
    for (const bad of ['vm.swappiness', 'kernel.*', 'Net.Core', 'net..core', '*']) {
      assert.throws(() => sysctlAllowlist([bad]), isInvalidSysctlPatternError, bad);
    }
    assert.doesNotThrow(() => sysctlAllowlist(['net.*', 'fs.mqueue.*', 'kernel.shm*', 'net/ipv4/conf/eno2.100/rp_filter']));
  });

  it('normalizes slash-separated names as the kubelet', () => {
    assert.equal(normalizeSysctlName('net/ipv4/conf/eno2.100/rp_filter'), 'net.ipv4.conf.eno2/100.rp_filter');
    assert.equal(normalizeSysctlName('net.ipv4.conf.eno2/100.rp_filter'), 'net.ipv4.conf.eno2/100.rp_filter');
  });
});

describe('AppArmor admission on a host without AppArmor', () => {
  const rejected: AdmitResult = { admit: false, reason: 'AppArmor', message: `Cannot enforce AppArmor: ${APPARMOR_NOT_ENABLED}` };
  const cases: { name: string; pod: V1Pod; expect: AdmitResult }[] = [
    { name: 'no profile', pod: pod(), expect: { admit: true } },
    { name: 'pod Unconfined', pod: pod({ securityContext: { appArmorProfile: { type: 'Unconfined' } } }), expect: { admit: true } },
    { name: 'pod RuntimeDefault', pod: pod({ securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } }), expect: rejected },
    { name: 'container Localhost', pod: pod({ containers: [{ name: 'app', securityContext: { appArmorProfile: { type: 'Localhost', localhostProfile: 'x' } } }] }), expect: rejected },
    { name: 'init container RuntimeDefault', pod: pod({ initContainers: [{ name: 'i', securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } }] }), expect: rejected },
    { name: 'legacy annotation runtime/default', pod: pod({}, { annotations: { 'container.apparmor.security.beta.kubernetes.io/app': 'runtime/default' } }), expect: rejected },
    { name: 'legacy annotation unconfined', pod: pod({}, { annotations: { 'container.apparmor.security.beta.kubernetes.io/app': 'unconfined' } }), expect: { admit: true } },
    { name: 'a running pod is not checked again', pod: pod({ securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } }, { phase: 'Running' }), expect: { admit: true } },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.deepEqual(admit(c.pod), c.expect);
    });
  }

  it('admits profiles on a host with AppArmor, but not an empty Localhost name', () => {
    const enabled = admitHandlers({ allowedUnsafeSysctls: [], kernelVersion: '6.1', appArmor: { enabled: true } });
    assert.deepEqual(admitPod(enabled, { pod: pod({ securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } }), node, otherPods: [] }), { admit: true });
    const empty = admitPod(enabled, { pod: pod({ securityContext: { appArmorProfile: { type: 'Localhost', localhostProfile: ' ' } } }), node, otherPods: [] });
    assert.equal(empty.admit ? '' : empty.reason, 'AppArmor');
  });
});

describe('supplementalGroupsPolicy admission', () => {
  it("admits Strict where the Node says the runtime enforces it (status.features), as the kubelet's predicate", () => {
    const enforcing: V1Node = { ...node, status: { ...node.status, features: { supplementalGroupsPolicy: true } } };
    assert.deepEqual(admitPod(admitHandlers({ allowedUnsafeSysctls: [], kernelVersion: '6.1', appArmor: { enabled: true } }), { pod: pod({ securityContext: { supplementalGroupsPolicy: 'Strict' } }), node: enforcing, otherPods: [] }), { admit: true });
  });

  it('rejects Strict where the runtime does not enforce it (no status.features, or false) and admits Merge', () => {
    const notEnforcing: V1Node = { ...node, status: { ...node.status, features: { supplementalGroupsPolicy: false } } };
    assert.equal(admitPod(admitHandlers({ allowedUnsafeSysctls: [], kernelVersion: '6.1', appArmor: { enabled: true } }), { pod: pod({ securityContext: { supplementalGroupsPolicy: 'Strict' } }), node: notEnforcing, otherPods: [] }).admit, false);
    assert.deepEqual(admit(pod({ securityContext: { supplementalGroupsPolicy: 'Strict' } })), {
      admit: false,
      reason: 'SupplementalGroupsPolicyNotSupported',
      message: 'SupplementalGroupsPolicy=Strict is not supported in this node',
    });
    assert.deepEqual(admit(pod({ securityContext: { supplementalGroupsPolicy: 'Merge' } })), { admit: true });
  });
});

describe('OS field admission (PodOSNotSupported)', () => {
  it('rejects a pod for another OS, admits linux and a pod without spec.os', () => {
    assert.deepEqual(admit(pod({ os: { name: 'windows' } })), {
      admit: false,
      reason: 'PodOSNotSupported',
      message: "Failed to admit pod as the OS field doesn't match node OS",
    });
    assert.deepEqual(admit(pod({ os: { name: 'linux' } })), { admit: true });
    assert.deepEqual(admit(pod()), { admit: true });
  });
});

describe('declared features admission (PodFeatureUnsupported)', () => {
  const rule = (action: string) => ({ action, exitCodes: { operator: 'In', values: [42] } });
  it('admits a pod with a RestartAllContainers rule on any container: the node declares RestartAllContainersOnContainerExits', () => {
    const onInit: Partial<PodSpec> = { initContainers: [{ name: 'setup', image: 'busybox', restartPolicy: 'Never', restartPolicyRules: [rule('RestartAllContainers')] }] };
    const onApp: Partial<PodSpec> = { containers: [{ name: 'app', image: 'busybox', restartPolicy: 'Never', restartPolicyRules: [rule('Restart'), rule('RestartAllContainers')] }] };
    assert.deepEqual(NODE_DECLARED_FEATURES, ['RestartAllContainersOnContainerExits']);
    assert.deepEqual(requiredNodeFeatures(pod(onInit).spec), ['RestartAllContainersOnContainerExits']);
    assert.deepEqual(admit(pod(onInit)), { admit: true });
    assert.deepEqual(admit(pod(onApp)), { admit: true });
    assert.deepEqual(admit(pod({ containers: [{ name: 'app', image: 'busybox', restartPolicy: 'Never', restartPolicyRules: [rule('Restart')] }] })), { admit: true });
  });

  it('rejects a RestartAllContainers rule on a node that does not declare the feature, as the kubelet with the gate off', () => {
    const onApp: Partial<PodSpec> = { containers: [{ name: 'app', image: 'busybox', restartPolicy: 'Never', restartPolicyRules: [rule('RestartAllContainers')] }] };
    assert.deepEqual(declaredFeaturesAdmitHandler([]).admit({ pod: pod(onApp), node, otherPods: [] }), {
      admit: false,
      reason: 'PodFeatureUnsupported',
      message: 'Pod requires node features that are not available: RestartAllContainersOnContainerExits',
    });
  });

  it('names every missing feature, sorted (not the declared one); a node that declares them admits', () => {
    const spec: Partial<PodSpec> = {
      hostNetwork: true,
      hostUsers: false,
      containers: [{ name: 'app', image: 'busybox', restartPolicy: 'Never', restartPolicyRules: [rule('RestartAllContainers')], volumeMounts: [{ name: 'v', mountPath: '/v', bindMountOptions: ['nosuid'] } as never] }],
    };
    assert.deepEqual(requiredNodeFeatures(pod(spec).spec), ['RestartAllContainersOnContainerExits', 'UserNamespacesHostNetworkSupport', 'VolumeBindMountOptions']);
    assert.deepEqual(declaredFeaturesAdmitHandler().admit({ pod: pod(spec), node, otherPods: [] }), {
      admit: false,
      reason: 'PodFeatureUnsupported',
      message: 'Pod requires node features that are not available: UserNamespacesHostNetworkSupport, VolumeBindMountOptions',
    });
    assert.deepEqual(declaredFeaturesAdmitHandler(requiredNodeFeatures(pod(spec).spec)).admit({ pod: pod(spec), node, otherPods: [] }), { admit: true });
  });
});

describe('admitPod', () => {
  it('runs handlers in order and stops at the first rejection', () => {
    const seen: string[] = [];
    const result = admitPod(
      [
        { name: 'a', admit: () => (seen.push('a'), { admit: true }) },
        { name: 'b', admit: () => (seen.push('b'), { admit: false, reason: 'B', message: 'b says no' }) },
        { name: 'c', admit: () => (seen.push('c'), { admit: false, reason: 'C', message: 'c says no' }) },
      ],
      { pod: pod(), node, otherPods: [] },
    );
    assert.deepEqual(result, { admit: false, reason: 'B', message: 'b says no' });
    assert.deepEqual(seen, ['a', 'b']);
  });
});
