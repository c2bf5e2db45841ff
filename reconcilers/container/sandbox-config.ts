/**
 * The CRI sandbox config of a pod: identity labels, the kubelet's log directory layout
 * (`<podLogDir>/<namespace>_<name>_<uid>`), hostname, resolver configuration, namespaces and port mappings.
 */
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { DnsConfig, LinuxSandboxSecurityContext, NamespaceOptions, PodSandboxConfig, PortMapping, UserNamespace } from '../../cri/types.js';
import { ANNOTATION_GRACE_PERIOD, sandboxLabels } from '../model/runtime-labels.js';
import type { PodKey } from '../../util/pod-key.js';
import { hasPrivilegedContainer, podSupplementalGroups, runtimeSELinuxOption, supplementalGroupsPolicyOf } from './security-context.js';
import { normalizeSysctlName } from '../model/sysctl-name.js';
import { podHostName } from '../dns/host-files.js';

export interface SandboxConfigOptions {
  readonly nodeName: string;
  /** Root of pod log directories, `/var/log/pods` by default. */
  readonly podLogDir: string;
  readonly attempt: number;
  /** The cluster domain: the pod's FQDN (`setHostnameAsFQDN`) is `<hostname>.<subdomain>.<ns>.svc.<domain>`. */
  readonly clusterDomain: string;
  /** The pod's resolver configuration (see `dns/pod-dns.ts`); without it the runtime copies its host's resolv.conf. */
  readonly dnsConfig?: DnsConfig;
  /** The pod's cgroup (`/kubepods/burstable/pod<uid>`): the runtime puts the sandbox and its containers under it. */
  readonly cgroupParent?: string;
  /** The pod's user namespace (`userns/`): the host's, or its own range for `hostUsers: false`; absent, none is sent. */
  readonly userNamespace?: UserNamespace;
}

/** Identity of a pod from its metadata. */
export function podIdentity(pod: V1Pod): PodKey {
  return { uid: pod.metadata?.uid ?? '', namespace: pod.metadata?.namespace ?? 'default', name: pod.metadata?.name ?? '' };
}

/** `<podLogDir>/<namespace>_<name>_<uid>`, where the runtime writes container logs. */
export function podLogDirectory(pod: PodKey, podLogDir: string): string {
  return path.join(podLogDir, `${pod.namespace}_${pod.name}_${pod.uid}`);
}

/** The pod's grace period: the deletion's when it is being deleted, else the spec's (default 30 s). */
export function podGracePeriodSeconds(pod: V1Pod): number {
  return pod.metadata?.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
}

/** Namespace modes of the pod: host network/PID/IPC or the pod's own. */
export function podNamespaces(pod: V1Pod): NamespaceOptions {
  const spec = pod.spec;
  return {
    network: spec?.hostNetwork === true ? 'NODE' : 'POD',
    pid: spec?.hostPID === true ? 'NODE' : spec?.shareProcessNamespace === true ? 'POD' : 'CONTAINER',
    ipc: spec?.hostIPC === true ? 'NODE' : 'POD',
  };
}

/** The kernel's nodename field holds 64 characters (65 bytes with the terminating NUL). */
const FQDN_MAX_LENGTH = 64;

/** The pod's FQDN does not fit the kernel's hostname: the sandbox config cannot be generated. */
export class FqdnTooLongError extends Error {
  override readonly name = 'FqdnTooLongError';
  constructor(fqdn: string) {
    // The kubelet's words (`GetNodenameForKernel`).
    super(`failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long (${FQDN_MAX_LENGTH} characters is the max, ${fqdn.length} characters requested)`);
  }
}

export function isFqdnTooLongError(error: unknown): error is FqdnTooLongError {
  return error instanceof FqdnTooLongError;
}

/**
 * The hostname the sandbox's UTS namespace gets (the kubelet's `GetNodenameForKernel`): the pod's
 * host name, or with `setHostnameAsFQDN` and a subdomain its FQDN, which must fit 64 characters.
 * @throws FqdnTooLongError
 */
export function kernelHostname(pod: V1Pod, clusterDomain: string): string {
  const { hostname, domain } = podHostName(pod, clusterDomain);
  if (domain === '' || pod.spec?.setHostnameAsFQDN !== true) return hostname;
  const fqdn = `${hostname}.${domain}`;
  if (fqdn.length > FQDN_MAX_LENGTH) throw new FqdnTooLongError(fqdn);
  return fqdn;
}

function portMappings(pod: V1Pod): PortMapping[] {
  return (pod.spec?.containers ?? []).flatMap((c) =>
    (c.ports ?? [])
      .filter((p) => p.hostPort !== undefined && p.hostPort > 0)
      .map((p) => ({
        protocol: (p.protocol ?? 'TCP') as PortMapping['protocol'],
        containerPort: p.containerPort,
        hostPort: p.hostPort ?? 0,
        hostIp: p.hostIP ?? '',
      })),
  );
}

/**
 * As the kubelet's `generatePodSandboxLinuxConfig`: privileged when any container is (containerd
 * refuses a privileged container in an unprivileged sandbox), always the runtime's default seccomp
 * profile (the pause container needs no more), fsGroup before the supplemental groups.
 */
function sandboxSecurityContext(pod: V1Pod, userNamespace: UserNamespace | undefined): LinuxSandboxSecurityContext {
  const securityContext = pod.spec?.securityContext;
  const selinux = runtimeSELinuxOption(securityContext?.seLinuxOptions);
  return {
    namespaceOptions: { ...podNamespaces(pod), ...(userNamespace === undefined ? {} : { userNamespace }) },
    privileged: hasPrivilegedContainer(pod),
    seccomp: { profileType: 'RuntimeDefault' },
    ...(securityContext?.runAsUser === undefined ? {} : { runAsUser: BigInt(securityContext.runAsUser) }),
    ...(securityContext?.runAsGroup === undefined ? {} : { runAsGroup: BigInt(securityContext.runAsGroup) }),
    supplementalGroups: podSupplementalGroups(pod),
    ...supplementalGroupsPolicyOf(pod),
    // Pod level only, as the kubelet's sandbox; the runtime applies them only where SELinux is on.
    ...(selinux === undefined ? {} : { selinuxOptions: selinux }),
  };
}

/** Builds the sandbox config for a pod. Pure. @throws FqdnTooLongError (see {@link kernelHostname}) */
export function buildSandboxConfig(pod: V1Pod, options: SandboxConfigOptions): PodSandboxConfig {
  const identity = podIdentity(pod);
  return {
    metadata: { ...identity, attempt: options.attempt },
    // A host-network pod keeps the node's hostname, as in the kubelet.
    hostname: pod.spec?.hostNetwork === true ? '' : kernelHostname(pod, options.clusterDomain),
    logDirectory: podLogDirectory(identity, options.podLogDir),
    ...(options.dnsConfig === undefined ? {} : { dnsConfig: options.dnsConfig }),
    labels: { ...(pod.metadata?.labels ?? {}), ...sandboxLabels(identity, options.nodeName) },
    annotations: { ...(pod.metadata?.annotations ?? {}), [ANNOTATION_GRACE_PERIOD]: String(podGracePeriodSeconds(pod)) },
    portMappings: portMappings(pod),
    linux: {
      ...(options.cgroupParent === undefined ? {} : { cgroupParent: options.cgroupParent }),
      securityContext: sandboxSecurityContext(pod, options.userNamespace),
      // Names in the slash form (`net/ipv4/ip_forward`) are sent in the dot form, as the kubelet does.
      sysctls: Object.fromEntries((pod.spec?.securityContext?.sysctls ?? []).map((s) => [normalizeSysctlName(s.name), s.value])),
    },
  };
}
