/**
 * What this host offers for confining containers, probed once at agent start-up as the kubelet
 * does (it never re-checks: enabling AppArmor needs an agent restart): whether AppArmor is
 * enforced, the kernel version (which safe sysctls it namespaces), and the masked paths (the
 * defaults plus each possible CPU's `thermal_throttle` directory that exists).
 */
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { APPARMOR_NOT_ENABLED, type AppArmorHost } from './index.js';
import { hostMaskedPaths, parseCpuList } from '../container/security-context.js';

/** The file reads the probe makes; the real filesystem by default. */
export interface HostFiles {
  exists(path: string): boolean;
  /** The file's text, or undefined when it cannot be read. */
  read(path: string): string | undefined;
}

/** What {@link probeHostSecurity} finds. */
export interface HostSecurity {
  readonly appArmor: AppArmorHost;
  readonly kernelVersion: string;
  readonly maskedPaths: readonly string[];
}

const realFiles: HostFiles = {
  exists: (path) => existsSync(path),
  read: (path) => {
    try {
      return readFileSync(path, 'utf8');
    } catch {
      return undefined;
    }
  },
};

/** The kubelet's `apparmor.IsEnabled`: the securityfs directory exists and the module says `Y`. */
export function appArmorHost(files: HostFiles): AppArmorHost {
  const enabled = files.exists('/sys/kernel/security/apparmor') && /^Y./s.test(files.read('/sys/module/apparmor/parameters/enabled') ?? '');
  return enabled ? { enabled: true } : { enabled: false, error: APPARMOR_NOT_ENABLED };
}

export function probeHostSecurity(files: HostFiles = realFiles, host: { release: string; cpuCount: number } = { release: os.release(), cpuCount: os.cpus().length }): HostSecurity {
  const possible = files.read('/sys/devices/system/cpu/possible');
  const cpus = (possible === undefined ? undefined : parseCpuList(possible)) ?? Array.from({ length: host.cpuCount }, (_, i) => i);
  return { appArmor: appArmorHost(files), kernelVersion: host.release, maskedPaths: hostMaskedPaths(cpus, (p) => files.exists(p)) };
}
