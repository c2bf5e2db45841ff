import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FlagError } from '../util/flags.js';
import { parseCgroupFlags } from './cgroup-flags.js';

const DEFAULTS = { 'cgroups-per-qos': 'true', 'cgroup-root': '/', 'pod-max-pids': '-1', 'cpu-cfs-quota': 'true' };

describe('pod cgroup flags', () => {
  it("defaults to the kubelet's: /kubepods, no pids limit, CFS quotas", () => {
    assert.deepEqual(parseCgroupFlags(DEFAULTS), { cgroupRoot: '/', podPidsLimit: -1, enforceCpuLimits: true });
    assert.deepEqual(parseCgroupFlags({ ...DEFAULTS, 'cgroup-root': '/nodelet', 'pod-max-pids': '4096', 'cpu-cfs-quota': 'false' }), { cgroupRoot: '/nodelet', podPidsLimit: 4096, enforceCpuLimits: false });
  });

  it('turns pod cgroups off with --cgroups-per-qos=false', () => {
    assert.equal(parseCgroupFlags({ ...DEFAULTS, 'cgroups-per-qos': 'false' }), undefined);
  });

  it('refuses bad values, naming the flag', () => {
    for (const bad of [{ 'cgroups-per-qos': 'yes' }, { 'cgroup-root': 'kubepods' }, { 'cgroup-root': '/a/../b' }, { 'pod-max-pids': 'many' }, { 'cpu-cfs-quota': '1' }]) {
      assert.throws(() => parseCgroupFlags({ ...DEFAULTS, ...bad }), (e: unknown) => e instanceof FlagError && e.message.includes(Object.keys(bad)[0] ?? '?'));
    }
  });
});
