import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { allocationCodec } from '../../controllers/plugins/proto.js';
import { decodeDeviceCheckpoint, encodeDeviceCheckpoint, fnv32a, isCorruptDeviceCheckpointError, readDeviceCheckpoint, writeDeviceCheckpoint, type DeviceCheckpoint } from './checkpoint.js';

const dir = mkdtempSync(path.join(tmpdir(), 'nodelet-devcp-'));
after(() => { rmSync(dir, { recursive: true, force: true }); });

const checkpoint: DeviceCheckpoint = {
  entries: [
    {
      podUid: 'uid-1',
      containerName: 'app',
      resourceName: 'example.com/resource',
      devicesPerNuma: { '-1': ['Dev-1'], '0': ['Dev-2'] },
      allocation: {
        envs: { A: 'b' },
        mounts: [{ containerPath: '/tmp/Dev-1', hostPath: '/tmp/Dev-1', readOnly: false }],
        devices: [{ containerPath: '/dev/x', hostPath: '/dev/null', permissions: 'rw' }],
        annotations: { 'k.io/a': 'v' },
        cdiDevices: ['example.com/resource=CDI-Dev-1'],
      },
    },
  ],
  registeredDevices: { 'example.com/resource': ['Dev-1', 'Dev-2'] },
};

describe('device manager checkpoint', () => {
  it('round-trips allocations (with the protobuf AllocResp) and registered devices', () => {
    assert.deepEqual(decodeDeviceCheckpoint(encodeDeviceCheckpoint(checkpoint, allocationCodec), allocationCodec), checkpoint);
  });

  it("is written in the kubelet's layout: Data.PodDeviceEntries, RegisteredDevices, base64 AllocResp, Checksum", () => {
    const parsed = JSON.parse(encodeDeviceCheckpoint(checkpoint, allocationCodec)) as { Data: { PodDeviceEntries: Record<string, unknown>[]; RegisteredDevices: unknown }; Checksum: number };
    assert.deepEqual(Object.keys(parsed.Data.PodDeviceEntries[0] ?? {}), ['PodUID', 'ContainerName', 'ResourceName', 'DeviceIDs', 'AllocResp']);
    assert.deepEqual(parsed.Data.PodDeviceEntries[0]?.DeviceIDs, { '-1': ['Dev-1'], '0': ['Dev-2'] });
    assert.equal(typeof parsed.Data.PodDeviceEntries[0]?.AllocResp, 'string');
    assert.deepEqual(parsed.Data.RegisteredDevices, { 'example.com/resource': ['Dev-1', 'Dev-2'] });
    assert.equal(parsed.Checksum, fnv32a(JSON.stringify(parsed.Data)));
  });

  it('refuses a file whose checksum does not match, or that is not a checkpoint', () => {
    const text = encodeDeviceCheckpoint(checkpoint, allocationCodec).replace('Dev-2"]}', 'Dev-3"]}');
    assert.throws(() => decodeDeviceCheckpoint(text, allocationCodec), isCorruptDeviceCheckpointError);
    assert.throws(() => decodeDeviceCheckpoint('{', allocationCodec), isCorruptDeviceCheckpointError);
  });

  it('reads as empty when there is no file, and writes atomically', async () => {
    const file = path.join(dir, 'kubelet_internal_checkpoint');
    assert.deepEqual(await readDeviceCheckpoint(file, allocationCodec), { entries: [], registeredDevices: {} });
    await writeDeviceCheckpoint(file, encodeDeviceCheckpoint(checkpoint, allocationCodec));
    assert.deepEqual(await readDeviceCheckpoint(file, allocationCodec), checkpoint);
    writeFileSync(file, readFileSync(file, 'utf8').replace('"Checksum":', '"Checksum":1'));
    await assert.rejects(readDeviceCheckpoint(file, allocationCodec), isCorruptDeviceCheckpointError);
  });

  it('FNV-32a matches the reference values', () => {
    assert.equal(fnv32a(''), 0x811c9dc5);
    assert.equal(fnv32a('a'), 0xe40c292c);
  });
});
