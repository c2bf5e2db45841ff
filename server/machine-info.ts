/**
 * The machine facts of `/metrics/cadvisor` (`machine_*`, `cadvisor_version_info`), as cAdvisor's
 * machine info reads them: CPU counts from `/proc/cpuinfo` (unique `core id`, `physical id`,
 * `book id`, `drawer id` lines: cAdvisor's counts, quirks included), memory and swap from
 * `/proc/meminfo`, the machine ID, the system UUID (DMI, then the device tree, then
 * `/etc/machine-id`, cAdvisor's order) and the boot ID. The parsing is pure; `readMachineInfo`
 * does the reading, with paths a test can point elsewhere.
 */
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** What the machine collector reports. */
export interface MachineInfo {
  readonly cores: number;
  readonly physicalCores: number;
  readonly sockets: number;
  readonly books: number;
  readonly drawers: number;
  readonly memoryBytes: number;
  readonly swapBytes: number;
  readonly machineId: string;
  readonly systemUuid: string;
  readonly bootId: string;
}

/** `cadvisor_version_info`'s labels. */
export interface VersionInfo {
  readonly kernelVersion: string;
  readonly osVersion: string;
}

function uniqueCount(text: string, key: string): number {
  const values = new Set<string>();
  for (const line of text.split('\n')) {
    const match = new RegExp(`^${key}\\s*:\\s*([0-9]+)$`).exec(line.trimEnd());
    if (match?.[1] !== undefined) values.add(match[1]);
  }
  return values.size;
}

function meminfoBytes(text: string, key: string): number | undefined {
  const match = new RegExp(`^${key}:\\s*([0-9]+) kB$`, 'm').exec(text);
  return match?.[1] === undefined ? undefined : Number(match[1]) * 1024;
}

/** The texts machine info is made of. */
export interface MachineTexts {
  readonly cpuinfo: string;
  readonly meminfo: string;
  readonly machineId: string;
  readonly systemUuid: string;
  readonly bootId: string;
}

/** Machine info from its files' texts; throws when `/proc/meminfo` has no MemTotal (cAdvisor fails the same way). */
export function parseMachineInfo(texts: MachineTexts): MachineInfo {
  const memoryBytes = meminfoBytes(texts.meminfo, 'MemTotal');
  if (memoryBytes === undefined) throw new Error('no MemTotal in /proc/meminfo');
  return {
    cores: texts.cpuinfo.split('\n').filter((l) => /^processor\s*:/.test(l)).length,
    physicalCores: uniqueCount(texts.cpuinfo, 'core id'),
    sockets: uniqueCount(texts.cpuinfo, 'physical id'),
    books: uniqueCount(texts.cpuinfo, 'book id'),
    drawers: uniqueCount(texts.cpuinfo, 'drawer id'),
    memoryBytes,
    swapBytes: meminfoBytes(texts.meminfo, 'SwapTotal') ?? 0,
    machineId: texts.machineId.trim(),
    systemUuid: texts.systemUuid.replace(/\0+$/, '').trim(),
    bootId: texts.bootId.trim(),
  };
}

/** `PRETTY_NAME` of an os-release file, unquoted. */
export function prettyName(osRelease: string): string {
  const match = /^PRETTY_NAME=(.*)$/m.exec(osRelease);
  return (match?.[1] ?? '').trim().replace(/^"(.*)"$/, '$1');
}

/** Where the machine files are. */
export interface MachinePaths {
  readonly procDir: string;
  readonly sysDir: string;
  readonly etcDir: string;
}

export const HOST_MACHINE_PATHS: MachinePaths = { procDir: '/proc', sysDir: '/sys', etcDir: '/etc' };

async function firstOf(files: readonly string[]): Promise<string> {
  for (const file of files) {
    try {
      return await readFile(file, 'utf8');
    } catch {
      // The next candidate.
    }
  }
  return '';
}

/** Reads the machine's facts. */
export async function readMachineInfo(paths: MachinePaths = HOST_MACHINE_PATHS): Promise<MachineInfo> {
  const [cpuinfo, meminfo] = await Promise.all([readFile(path.join(paths.procDir, 'cpuinfo'), 'utf8'), readFile(path.join(paths.procDir, 'meminfo'), 'utf8')]);
  const machineIdFiles = [path.join(paths.etcDir, 'machine-id'), '/var/lib/dbus/machine-id'];
  const uuidFiles = [path.join(paths.sysDir, 'class', 'dmi', 'id', 'product_uuid'), path.join(paths.procDir, 'device-tree', 'system-id'), path.join(paths.procDir, 'device-tree', 'vm,uuid'), path.join(paths.etcDir, 'machine-id')];
  return parseMachineInfo({
    cpuinfo,
    meminfo,
    machineId: await firstOf(machineIdFiles),
    systemUuid: await firstOf(uuidFiles),
    bootId: await firstOf([path.join(paths.procDir, 'sys', 'kernel', 'random', 'boot_id')]),
  });
}

/** The kernel release and the OS's pretty name (of the filesystem nodelet sees: its image's when it runs in a container). */
export async function readVersionInfo(paths: MachinePaths = HOST_MACHINE_PATHS): Promise<VersionInfo> {
  return { kernelVersion: os.release(), osVersion: prettyName(await firstOf([path.join(paths.etcDir, 'os-release'), '/usr/lib/os-release'])) };
}
