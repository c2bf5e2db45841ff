import assert from 'node:assert/strict';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { criLogText, logTail, prepareTerminationMessageFile, readTerminationMessage } from './termination-message.js';

describe('termination messages', () => {
  it('joins partial CRI log lines and drops timestamps and streams', () => {
    const log = '2026-01-01T00:00:00.1Z stdout P hel\n2026-01-01T00:00:00.2Z stdout F lo\n2026-01-01T00:00:00.3Z stderr F oops\n';
    assert.equal(criLogText(log), 'hello\noops\n');
  });

  it('keeps the last 80 lines and at most 2048 bytes of a log', () => {
    const text = Array.from({ length: 100 }, (_, i) => `line ${i}`).join('\n');
    const tail = logTail(text);
    assert.equal(tail.split('\n').length, 80);
    assert.ok(tail.endsWith('line 99'));
    assert.equal(Buffer.byteLength(logTail('x'.repeat(5000))), 2048);
  });

  it('creates the message file writable by any user, whatever the umask (a non-root container must write it)', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodelet-term-'));
    const previous = process.umask(0o022);
    try {
      const { hostPath } = await prepareTerminationMessageFile({ rootDir: dir, podUid: 'u', containerName: 'c', restartCount: 1, containerPath: '/dev/termination-log' });
      assert.equal((await stat(hostPath)).mode & 0o777, 0o666);
    } finally {
      process.umask(previous);
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('reads the message file, else falls back to the log tail for a failed container', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodelet-term-'));
    try {
      const { hostPath, mount } = await prepareTerminationMessageFile({ rootDir: dir, podUid: 'u', containerName: 'c', restartCount: 0, containerPath: '/dev/termination-log' });
      assert.equal(mount.containerPath, '/dev/termination-log');
      const logPath = path.join(dir, 'c.log');
      await writeFile(logPath, '2026-01-01T00:00:00Z stderr F boom\n');
      assert.equal(await readTerminationMessage({ hostPath, policy: 'FallbackToLogsOnError', exitCode: 1, logPath }), 'boom');
      assert.equal(await readTerminationMessage({ hostPath, policy: 'File', exitCode: 1, logPath }), '');
      assert.equal(await readTerminationMessage({ hostPath, policy: 'FallbackToLogsOnError', exitCode: 0, logPath }), '');
      await writeFile(hostPath, 'written by the app');
      assert.equal(await readTerminationMessage({ hostPath, policy: 'FallbackToLogsOnError', exitCode: 1, logPath }), 'written by the app');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
