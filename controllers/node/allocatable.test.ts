import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AllocatableView, allocatableOf, formatMilliCpu, NO_RESERVATIONS } from './allocatable.js';

const GI = 2 ** 30;
const capacity = { milliCpu: 2000, memoryBytes: 8 * GI, ephemeralStorageBytes: 100 * GI };

describe('node allocatable', () => {
  it('equals capacity with nothing reserved', () => {
    assert.deepEqual(allocatableOf(capacity, NO_RESERVATIONS), capacity);
  });

  it('subtracts system-reserved and kube-reserved, resource by resource', () => {
    const allocatable = allocatableOf(capacity, {
      systemReserved: { cpu: '100m', memory: '512Mi', 'ephemeral-storage': '1Gi', pid: '1000' },
      kubeReserved: { cpu: '0.4', memory: '1Gi' },
    });
    assert.deepEqual(allocatable, { milliCpu: 1500, memoryBytes: 8 * GI - 1.5 * GI, ephemeralStorageBytes: 99 * GI });
  });

  it('never goes below zero', () => {
    assert.deepEqual(allocatableOf(capacity, { systemReserved: { cpu: '3', memory: '10Gi' }, kubeReserved: {} }), { milliCpu: 0, memoryBytes: 0, ephemeralStorageBytes: 100 * GI });
  });

  it('formats CPU as the Node reports it', () => {
    assert.equal(formatMilliCpu(2000), '2');
    assert.equal(formatMilliCpu(1900), '1900m');
    assert.equal(formatMilliCpu(0), '0');
  });

  it('gives the per-pod machinery a view that follows live reservations', () => {
    const view = new AllocatableView({ milliCpu: 2000, memoryBytes: 8 * GI }, NO_RESERVATIONS);
    assert.equal(view.milliCpu, 2000);
    view.setReservations({ systemReserved: { cpu: '500m', memory: '1Gi' }, kubeReserved: {} });
    assert.deepEqual([view.milliCpu, view.memoryBytes], [1500, 7 * GI]);
  });
});
