import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { PulledRecords } from './pulled-records.js';

describe('pulled records on disk', () => {
  it('counts one record per image pulled, 0 before the first pull made the directory', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'nodelet-pulled-'));
    try {
      const records = new PulledRecords(path.join(root, 'image_manager', 'pulled'));
      assert.equal(await records.count(), 0);
      await records.recordPull('sha256:a', undefined);
      await records.recordPull('sha256:a', { username: 'u', password: 'p' });
      await records.recordPull('sha256:b', undefined);
      assert.equal(await records.count(), 2);
      assert.equal(await new PulledRecords(path.join(root, 'image_manager', 'pulled')).count(), 2, 'a restarted agent counts what is on disk');
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
