/** The host probe over a fake filesystem: AppArmor as the kubelet detects it, masked paths per CPU. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { appArmorHost, probeHostSecurity, type HostFiles } from './host-security.js';
import { DEFAULT_MASKED_PATHS } from '../container/security-context.js';

function files(entries: Record<string, string>): HostFiles {
  return { exists: (p) => p in entries, read: (p) => entries[p] };
}

describe('probeHostSecurity', () => {
  it('sees AppArmor only with securityfs and the module enabled', () => {
    assert.deepEqual(appArmorHost(files({})), { enabled: false, error: 'AppArmor is not enabled on the host' });
    assert.deepEqual(appArmorHost(files({ '/sys/kernel/security/apparmor': '', '/sys/module/apparmor/parameters/enabled': 'N\n' })).enabled, false);
    assert.deepEqual(appArmorHost(files({ '/sys/module/apparmor/parameters/enabled': 'Y\n' })).enabled, false, 'no securityfs');
    assert.deepEqual(appArmorHost(files({ '/sys/kernel/security/apparmor': '', '/sys/module/apparmor/parameters/enabled': 'Y\n' })), { enabled: true });
  });

  it('masks the thermal_throttle of possible CPUs that have one, falling back to the CPU count', () => {
    const withPossible = probeHostSecurity(files({ '/sys/devices/system/cpu/possible': '0-3\n', '/sys/devices/system/cpu/cpu2/thermal_throttle': '' }), { release: '6.1.0', cpuCount: 1 });
    assert.deepEqual(withPossible.maskedPaths, [...DEFAULT_MASKED_PATHS, '/sys/devices/system/cpu/cpu2/thermal_throttle']);
    assert.equal(withPossible.kernelVersion, '6.1.0');
    const fallback = probeHostSecurity(files({ '/sys/devices/system/cpu/cpu1/thermal_throttle': '' }), { release: '6.1.0', cpuCount: 2 });
    assert.deepEqual(fallback.maskedPaths, [...DEFAULT_MASKED_PATHS, '/sys/devices/system/cpu/cpu1/thermal_throttle']);
  });
});
