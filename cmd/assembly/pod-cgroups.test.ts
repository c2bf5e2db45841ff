/** Pod cgroups only with the runtime's cgroup driver nodelet has (KubeletCgroupDriverFromCRI). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { CriUnimplementedError } from '../../cri/errors.js';
import { FakeRuntime } from '../../test/doubles/fake-runtime.js';
import { createFakeClock } from '../../test/doubles/fake-clock.js';
import { NO_RESERVATIONS } from '../../controllers/node/allocatable.js';
import { buildPodCgroupSettings, isUnsupportedCgroupDriverError, runtimeCgroupDriver } from './pod-cgroups.js';

const FLAGS = { cgroupRoot: '/', podPidsLimit: -1, enforceCpuLimits: true };
const TIMING = { clock: createFakeClock(), observe: () => undefined };


describe('the runtime\'s cgroup driver', () => {
  it('is what RuntimeConfig reports, and cgroupfs for a runtime without it (the kubelet\'s default)', async () => {
    const runtime = new FakeRuntime();
    assert.equal(await runtimeCgroupDriver(runtime), 'cgroupfs');
    runtime.cgroupDriver = 'systemd';
    assert.equal(await runtimeCgroupDriver(runtime), 'systemd');
    runtime.injectError('runtimeConfig', new CriUnimplementedError({ method: 'RuntimeConfig', code: GrpcStatus.UNIMPLEMENTED, message: 'unknown method' }));
    assert.equal(await runtimeCgroupDriver(runtime), 'cgroupfs');
  });

  it('refuses pod cgroups under a systemd runtime, naming both ways out, and asks nothing with --cgroups-per-qos=false', async () => {
    const runtime = new FakeRuntime();
    runtime.cgroupDriver = 'systemd';
    await assert.rejects(buildPodCgroupSettings(FLAGS, NO_RESERVATIONS, runtime, TIMING), (error: unknown) => {
      assert.ok(isUnsupportedCgroupDriverError(error));
      assert.equal(error.driver, 'systemd');
      assert.match(error.message, /SystemdCgroup = false/);
      assert.match(error.message, /--cgroups-per-qos=false/);
      return true;
    });
    const off = await buildPodCgroupSettings(undefined, NO_RESERVATIONS, runtime, TIMING);
    assert.equal(off.cgroups, undefined);
    assert.equal(runtime.callsTo('runtimeConfig').length, 1, 'only the run with pod cgroups asked');
  });
});
