/**
 * Facts about the host that the Node object reports: capacity (cpu, memory, disk of the root dir)
 * and identity (machine-id, system UUID, boot id, kernel, OS, architecture, hostname). Reading goes
 * through a `HostSystem` so tests feed fixed files instead of this machine's.
 */
import { readFile, statfs } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** What `buildNodeStatus` needs to know about the host. */
export interface HostFacts {
  /** Logical CPUs. */
  readonly cpuCount: number;
  /** Total memory in bytes (MemTotal). */
  readonly memoryBytes: number;
  /** Size in bytes of the filesystem holding the agent's root dir. */
  readonly ephemeralStorageBytes: number;
  /** Contents of /etc/machine-id. */
  readonly machineId: string;
  /** DMI product UUID when readable, else the machine-id (as on VMs without DMI). */
  readonly systemUuid: string;
  /** Changes on every boot; lets the control plane notice reboots. */
  readonly bootId: string;
  /** `uname -r`. */
  readonly kernelVersion: string;
  /** PRETTY_NAME from /etc/os-release. */
  readonly osImage: string;
  /** Go's name for the CPU architecture (`amd64`, `arm64`, …), as Kubernetes labels use. */
  readonly architecture: string;
  /** The host name, lowercased. */
  readonly hostname: string;
  /** Whether the agent runs in a user namespace other than the host's (rootless, or a userns'd pod). */
  readonly runningInUserNamespace: boolean;
}

/** The slice of the operating system host-info reads. */
export interface HostSystem {
  readFile(file: string): Promise<string>;
  /** Block count and block size of the filesystem holding `dir`; rejects with ENOENT if absent. */
  statfs(dir: string): Promise<{ readonly blocks: number; readonly bsize: number }>;
  cpuCount(): number;
  totalMemoryBytes(): number;
  kernelRelease(): string;
  /** `process.arch`-style name (`x64`, `arm64`, …). */
  nodeArch(): string;
  hostname(): string;
}

/** The real host. */
export const nodeHostSystem: HostSystem = {
  readFile: (file) => readFile(file, 'utf8'),
  statfs: (dir) => statfs(dir),
  // os.cpus() can be empty in some sandboxes; availableParallelism() is the fallback.
  cpuCount: () => os.cpus().length || os.availableParallelism(),
  totalMemoryBytes: () => os.totalmem(),
  kernelRelease: () => os.release(),
  nodeArch: () => process.arch,
  hostname: () => os.hostname(),
};

/** Source of host facts, read afresh on every status refresh. */
export interface HostInfo {
  read(): Promise<HostFacts>;
}

const NODE_TO_GO_ARCH: Readonly<Record<string, string>> = {
  x64: 'amd64',
  ia32: '386',
  arm64: 'arm64',
  arm: 'arm',
  ppc64: 'ppc64le', // Node reports little-endian POWER as ppc64; Kubernetes only runs on ppc64le.
  s390x: 's390x',
  riscv64: 'riscv64',
  loong64: 'loong64',
  mips: 'mips',
  mipsel: 'mipsle',
};

/** Maps Node's `process.arch` to the GOARCH value Kubernetes uses in `kubernetes.io/arch`. */
export function goArchitecture(nodeArch: string): string {
  return NODE_TO_GO_ARCH[nodeArch] ?? nodeArch;
}

/** Parses os-release(5): KEY=VALUE lines, values optionally quoted, backslash escapes in quotes. */
export function parseOsRelease(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const rawLine of text.split('\n')) {
    const line = rawLine.trim();
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) continue;
    fields[line.slice(0, eq)] = unquote(line.slice(eq + 1));
  }
  return fields;
}

function unquote(value: string): string {
  const quote = value[0];
  if ((quote === '"' || quote === "'") && value.length >= 2 && value.endsWith(quote)) {
    const inner = value.slice(1, -1);
    return quote === '"' ? inner.replace(/\\(.)/g, '$1') : inner;
  }
  return value;
}

async function readTrimmed(system: HostSystem, file: string): Promise<string | undefined> {
  try {
    const text = (await system.readFile(file)).trim();
    return text === '' ? undefined : text;
  } catch {
    return undefined;
  }
}

/** Size of the filesystem holding `dir`, walking up to the nearest existing ancestor. */
async function filesystemBytes(system: HostSystem, dir: string): Promise<number> {
  let current = path.resolve(dir);
  for (;;) {
    try {
      const fs = await system.statfs(current);
      return fs.blocks * fs.bsize;
    } catch (err: unknown) {
      const parent = path.dirname(current);
      // The root dir need not exist before the first pod; anything but ENOENT is a real failure.
      if (parent === current || !isEnoent(err)) throw err;
      current = parent;
    }
  }
}

function isEnoent(err: unknown): boolean {
  return typeof err === 'object' && err !== null && 'code' in err && err.code === 'ENOENT';
}

/** Options of {@link readHostFacts}. */
export interface ReadHostFactsOptions {
  /** The agent's root dir; its filesystem is the node's ephemeral storage. */
  readonly rootDir: string;
  readonly system?: HostSystem;
}

/** Reads every host fact once. Identity files that cannot be read become empty strings. */
export async function readHostFacts(options: ReadHostFactsOptions): Promise<HostFacts> {
  const system = options.system ?? nodeHostSystem;
  const [machineId, productUuid, bootId, osRelease, ephemeralStorageBytes, uidMap] = await Promise.all([
    readTrimmed(system, '/etc/machine-id'),
    readTrimmed(system, '/sys/class/dmi/id/product_uuid'),
    readTrimmed(system, '/proc/sys/kernel/random/boot_id'),
    readTrimmed(system, '/etc/os-release'),
    filesystemBytes(system, options.rootDir),
    readTrimmed(system, '/proc/self/uid_map'),
  ]);
  return {
    cpuCount: system.cpuCount(),
    memoryBytes: system.totalMemoryBytes(),
    ephemeralStorageBytes,
    machineId: machineId ?? '',
    systemUuid: productUuid ?? machineId ?? '',
    bootId: bootId ?? '',
    kernelVersion: system.kernelRelease(),
    osImage: parseOsRelease(osRelease ?? '').PRETTY_NAME ?? 'Linux',
    architecture: goArchitecture(system.nodeArch()),
    hostname: system.hostname().toLowerCase(),
    runningInUserNamespace: isUserNamespacedUidMap(uidMap),
  };
}

/**
 * Whether a uid_map is a user namespace's rather than the initial one, whose map is the whole
 * range `0 0 4294967295` (the kubelet's `userns.RunningInUserNS`); an unreadable map is the host's.
 */
export function isUserNamespacedUidMap(uidMap: string | undefined): boolean {
  if (uidMap === undefined) return false;
  return uidMap.trim().split(/\s+/).join(' ') !== '0 0 4294967295';
}

/** A {@link HostInfo} reading the given system (the real host by default). */
export function createHostInfo(options: ReadHostFactsOptions): HostInfo {
  return { read: () => readHostFacts(options) };
}

/**
 * What the node can give pods, as the per-pod machinery needs it: the default for
 * `resourceFieldRef` of a container without limits is the node's allocatable (CPU in millicores,
 * memory in bytes): capacity less the hard `memory.available` eviction threshold (the kubelet
 * subtracts it; no other reservation is configurable yet).
 */
export function nodeAllocatable(system: HostSystem = nodeHostSystem, reservedMemoryBytes = 0): { readonly milliCpu: number; readonly memoryBytes: number } {
  return { milliCpu: system.cpuCount() * 1000, memoryBytes: Math.max(0, system.totalMemoryBytes() - reservedMemoryBytes) };
}
