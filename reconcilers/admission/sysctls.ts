/**
 * The kubelet's sysctl admission (pkg/kubelet/sysctl): a pod may set a sysctl only when it is on
 * the node's allowlist — the safe sysctls (namespaced and isolated from other pods, as far as this
 * kernel namespaces them) plus the patterns of `--allowed-unsafe-sysctls` — and only when the pod
 * does not share that sysctl's namespace with the host (no net.* with hostNetwork, no IPC
 * sysctls with hostIPC). Anything else is rejected with `SysctlForbidden`.
 */
import type { AdmitResult, PodAdmitHandler } from './admit.js';
import { ADMITTED } from './admit.js';
import { normalizeSysctlName } from '../model/sysctl-name.js';

export const SYSCTL_FORBIDDEN_REASON = 'SysctlForbidden';

/** The safe sysctls of kubelet v1.36 with the kernel version that namespaces each (when needed). */
export const SAFE_SYSCTLS: readonly { readonly name: string; readonly kernel?: string }[] = [
  { name: 'kernel.shm_rmid_forced' },
  { name: 'net.ipv4.ip_local_port_range' },
  { name: 'net.ipv4.tcp_syncookies' },
  { name: 'net.ipv4.ping_group_range' },
  { name: 'net.ipv4.ip_unprivileged_port_start' },
  { name: 'net.ipv4.ip_local_reserved_ports', kernel: '3.16' },
  { name: 'net.ipv4.tcp_keepalive_time', kernel: '4.5' },
  { name: 'net.ipv4.tcp_fin_timeout', kernel: '4.6' },
  { name: 'net.ipv4.tcp_keepalive_intvl', kernel: '4.5' },
  { name: 'net.ipv4.tcp_keepalive_probes', kernel: '4.5' },
  { name: 'net.ipv4.tcp_rmem', kernel: '4.15' },
  { name: 'net.ipv4.tcp_wmem', kernel: '4.15' },
];

/** The kernel namespace a sysctl lives in; the kubelet spells them `IPC` and `Net` in messages. */
type SysctlNamespace = 'IPC' | 'Net';

const NAMESPACE_OF_NAME: Readonly<Record<string, SysctlNamespace>> = {
  'kernel.sem': 'IPC',
  'kernel.shmall': 'IPC',
  'kernel.shmmax': 'IPC',
  'kernel.shmmni': 'IPC',
  'kernel.shm_rmid_forced': 'IPC',
  'kernel.shm': 'IPC',
  'kernel.msgmax': 'IPC',
  'kernel.msgmnb': 'IPC',
  'kernel.msgmni': 'IPC',
  'kernel.msg': 'IPC',
};

const NAMESPACE_OF_PREFIX: readonly (readonly [string, SysctlNamespace])[] = [
  ['net', 'Net'],
  ['fs.mqueue', 'IPC'],
];

/** A `--allowed-unsafe-sysctls` entry the kubelet would refuse to start with. */
export class InvalidSysctlPatternError extends Error {
  override readonly name = 'InvalidSysctlPatternError';
}

export function isInvalidSysctlPatternError(error: unknown): error is InvalidSysctlPatternError {
  return error instanceof InvalidSysctlPatternError;
}

function namespaceOf(name: string): SysctlNamespace | undefined {
  const exact = NAMESPACE_OF_NAME[name];
  if (exact !== undefined) return exact;
  return NAMESPACE_OF_PREFIX.find(([prefix]) => name.startsWith(`${prefix}.`))?.[1];
}

const SEGMENT = '[a-z0-9]([-_a-z0-9]*[a-z0-9])?';
const PATTERN_SEGMENT = '([a-z0-9][-_a-z0-9]*)?[a-z0-9*]';
const PATTERN = new RegExp(`^(${SEGMENT}[\\./])*${PATTERN_SEGMENT}$`);
const MAX_SYSCTL_LENGTH = 253;

/** Whether kernel version `have` (`6.1.0-13-amd64`) is at least `need` (`4.15`). */
export function kernelAtLeast(have: string, need: string): boolean {
  const parse = (v: string): number[] => (/^\d+(\.\d+)*/.exec(v)?.[0] ?? '0').split('.').map(Number);
  const a = parse(have);
  const b = parse(need);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const diff = (a[i] ?? 0) - (b[i] ?? 0);
    if (diff !== 0) return diff > 0;
  }
  return true;
}

/** The safe sysctls this kernel namespaces. */
export function safeSysctls(kernelVersion: string): string[] {
  return SAFE_SYSCTLS.filter((s) => s.kernel === undefined || kernelAtLeast(kernelVersion, s.kernel)).map((s) => s.name);
}

/** The node's allowlist: exact names and prefixes (patterns ending in `*`), each with its namespace. */
export interface SysctlAllowlist {
  readonly names: ReadonlyMap<string, SysctlNamespace>;
  readonly prefixes: ReadonlyMap<string, SysctlNamespace>;
}

/**
 * The kubelet's `NewAllowlist`. @throws InvalidSysctlPatternError for an entry that is not a
 * sysctl pattern or not known to be namespaced (the kubelet refuses to start on either).
 */
export function sysctlAllowlist(patterns: readonly string[]): SysctlAllowlist {
  const names = new Map<string, SysctlNamespace>();
  const prefixes = new Map<string, SysctlNamespace>();
  for (const pattern of patterns) {
    if (pattern.length > MAX_SYSCTL_LENGTH || !PATTERN.test(pattern)) {
      throw new InvalidSysctlPatternError(`sysctl "${pattern}" must have at most ${MAX_SYSCTL_LENGTH} characters and match regex ${PATTERN.source.slice(1, -1)}`);
    }
    const normalized = normalizeSysctlName(pattern);
    const star = normalized.indexOf('*');
    const nameOrPrefix = star === -1 ? normalized : normalized.slice(0, star);
    const ns = namespaceOf(nameOrPrefix);
    if (ns === undefined) throw new InvalidSysctlPatternError(`the sysctls "${nameOrPrefix}" are not known to be namespaced`);
    (star === -1 ? names : prefixes).set(nameOrPrefix, ns);
  }
  return { names, prefixes };
}

/** Why a sysctl is refused (the kubelet's wording), or undefined when it is allowed. */
export function sysctlRefusal(allowlist: SysctlAllowlist, rawName: string, host: { readonly net: boolean; readonly ipc: boolean }): string | undefined {
  const name = normalizeSysctlName(rawName);
  const ns = allowlist.names.get(name) ?? [...allowlist.prefixes].find(([prefix]) => name.startsWith(prefix))?.[1];
  if (ns === undefined) return `${JSON.stringify(name)} not allowlisted`;
  if ((ns === 'IPC' && host.ipc) || (ns === 'Net' && host.net)) return `${JSON.stringify(name)} not allowed with host ${ns} enabled`;
  return undefined;
}

/** The sysctl admit handler over an allowlist built by {@link sysctlAllowlist}. */
export function sysctlAdmitHandler(allowlist: SysctlAllowlist): PodAdmitHandler {
  return {
    name: 'sysctl',
    admit: ({ pod }): AdmitResult => {
      const host = { net: pod.spec?.hostNetwork === true, ipc: pod.spec?.hostIPC === true };
      for (const sysctl of pod.spec?.securityContext?.sysctls ?? []) {
        const refusal = sysctlRefusal(allowlist, sysctl.name, host);
        if (refusal !== undefined) return { admit: false, reason: SYSCTL_FORBIDDEN_REASON, message: `forbidden sysctl: ${refusal}` };
      }
      return ADMITTED;
    },
  };
}
