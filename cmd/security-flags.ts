/**
 * The agent's security flags (`--allowed-unsafe-sysctls`, `--seccomp-profile-root`), checked as
 * the kubelet checks them: a sysctl pattern that is malformed or not known to be namespaced stops
 * the agent before it starts, rather than rejecting pods later for a reason nobody reads.
 */
import path from 'node:path';
import { isInvalidSysctlPatternError, sysctlAllowlist } from '../reconcilers/admission/index.js';
import { FlagError } from '../util/flags.js';

/** `--allowed-unsafe-sysctls`: comma-separated names or patterns ending in `*`. @throws FlagError */
export function parseAllowedUnsafeSysctls(raw: string): string[] {
  const patterns = raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
  try {
    sysctlAllowlist(patterns);
  } catch (error) {
    if (isInvalidSysctlPatternError(error)) throw new FlagError(`--allowed-unsafe-sysctls: ${error.message}`);
    throw error;
  }
  return patterns;
}

/** `--seccomp-profile-root`, or the kubelet's default `<root-dir>/seccomp`. */
export function seccompProfileRoot(raw: string | undefined, rootDir: string): string {
  return raw === undefined || raw === '' ? path.join(rootDir, 'seccomp') : raw;
}
