import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { signalObservations } from './observations.js';

describe('signal observations', () => {
  it('memory.available is capacity less the working set; filesystems and PIDs as statfs and pid_max say', () => {
    const fs = { capacityBytes: 1000, availableBytes: 300, inodes: 50, inodesFree: 20 };
    const observations = signalObservations({ memory: { capacityBytes: 8000, workingSetBytes: 3000 }, pids: { max: 32768, running: 768 }, nodeFs: fs, imageFs: { ...fs, availableBytes: 100 } });
    assert.deepEqual(Object.fromEntries(observations), {
      'memory.available': { available: 5000, capacity: 8000 },
      'nodefs.available': { available: 300, capacity: 1000 },
      'nodefs.inodesFree': { available: 20, capacity: 50 },
      'imagefs.available': { available: 100, capacity: 1000 },
      'imagefs.inodesFree': { available: 20, capacity: 50 },
      'pid.available': { available: 32000, capacity: 32768 },
    });
  });

  it('leaves out what could not be read, and never reports less than nothing available', () => {
    const observations = signalObservations({ memory: { capacityBytes: 8000, workingSetBytes: 9000 }, pids: { max: undefined, running: 3 }, nodeFs: { capacityBytes: 1, availableBytes: 1, inodes: 1, inodesFree: 1 } });
    assert.deepEqual([...observations.keys()], ['memory.available', 'nodefs.available', 'nodefs.inodesFree']);
    assert.equal(observations.get('memory.available')?.available, 0);
  });
});
