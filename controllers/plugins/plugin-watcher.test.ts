/**
 * The registration watcher over real gRPC: fake plugin sockets in a temporary plugins_registry/
 * answer GetInfo and hear NotifyRegistrationStatus.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { systemClock } from '../../util/clock.js';
import { TestRegistrationSocket } from '../../test/doubles/test-device-plugin.js';
import { PluginWatcher, type PluginHandler, type PluginInfo } from './plugin-watcher.js';
import { until } from '../../test/doubles/until.js';

const root = mkdtempSync(path.join(tmpdir(), 'nodelet-pw-'));
after(() => { rmSync(root, { recursive: true, force: true }); });
const logger = pino({ level: 'silent' });

function recordingHandler(): PluginHandler & { registered: string[]; deregistered: string[] } {
  const registered: string[] = [];
  const deregistered: string[] = [];
  return {
    registered,
    deregistered,
    validate: (info: PluginInfo) => (info.supportedVersions.includes('v1beta1') ? undefined : `unsupported versions ${info.supportedVersions.join(',')}`),
    register: (info: PluginInfo, endpoint: string) => {
      registered.push(`${info.name}@${endpoint}`);
      return Promise.resolve();
    },
    deregister: (info: PluginInfo) => { deregistered.push(info.name); },
  };
}

describe('plugin registration watcher', () => {
  it('registers sockets already there at start and new ones, notifies them, and deregisters a socket that goes', async () => {
    const dir = path.join(root, 'basic');
    mkdirSync(dir);
    const early = new TestRegistrationSocket(path.join(dir, 'early.sock'), { type: 'DevicePlugin', name: 'example.com/early', endpoint: '/run/early.sock', supportedVersions: ['v1beta1'] });
    await early.start();
    const handler = recordingHandler();
    const watcher = new PluginWatcher({ dir, handlers: { DevicePlugin: handler }, clock: systemClock, logger });
    await watcher.start();
    try {
      assert.deepEqual(handler.registered, ['example.com/early@/run/early.sock']);
      assert.deepEqual(early.statuses, [{ pluginRegistered: true, error: '' }]);
      const late = new TestRegistrationSocket(path.join(dir, 'late.sock'), { type: 'DevicePlugin', name: 'example.com/late', endpoint: '', supportedVersions: ['v1beta1'] });
      await late.start();
      await until('the new socket registered', () => handler.registered.length === 2);
      assert.equal(handler.registered[1], `example.com/late@${path.join(dir, 'late.sock')}`, 'no endpoint: the registration socket itself');
      late.stop();
      rmSync(path.join(dir, 'late.sock'), { force: true });
      await until('the gone socket deregistered', () => handler.deregistered.length === 1);
      assert.deepEqual(handler.deregistered, ['example.com/late']);
      assert.deepEqual([...watcher.plugins().values()].map((p) => p.name), ['example.com/early']);
    } finally {
      await watcher.stop();
      early.stop();
    }
  });

  it("refuses plugin types without a handler (CSI here, DRA) and invalid ones with NotifyRegistrationStatus false and the kubelet's message, reported once", async () => {
    const dir = path.join(root, 'refused');
    mkdirSync(dir);
    const csi = new TestRegistrationSocket(path.join(dir, 'csi.sock'), { type: 'CSIPlugin', name: 'csi.example.com', endpoint: '', supportedVersions: ['1.0.0'] });
    const dra = new TestRegistrationSocket(path.join(dir, 'dra.sock'), { type: 'DRAPlugin', name: 'dra.example.com', endpoint: '', supportedVersions: ['v1'] });
    const old = new TestRegistrationSocket(path.join(dir, 'old.sock'), { type: 'DevicePlugin', name: 'example.com/old', endpoint: '', supportedVersions: ['v1alpha'] });
    for (const s of [csi, dra, old]) await s.start();
    const handler = recordingHandler();
    const refused: string[] = [];
    const watcher = new PluginWatcher({ dir, handlers: { DevicePlugin: handler }, clock: systemClock, logger, onRefused: (m) => refused.push(m) });
    await watcher.start();
    try {
      assert.deepEqual(csi.statuses, [{ pluginRegistered: false, error: `RegisterPlugin error -- no handler registered for plugin type: CSIPlugin at socket ${path.join(dir, 'csi.sock')}` }]);
      assert.deepEqual(dra.statuses, [{ pluginRegistered: false, error: `RegisterPlugin error -- no handler registered for plugin type: DRAPlugin at socket ${path.join(dir, 'dra.sock')}` }]);
      assert.deepEqual(old.statuses, [{ pluginRegistered: false, error: 'RegisterPlugin error -- plugin validation failed with err: unsupported versions v1alpha' }]);
      assert.deepEqual(handler.registered, []);
      assert.equal(watcher.plugins().size, 0);
      assert.equal(refused.length, 3);
      // Tried again with backoff, not every scan.
      await watcher.scan();
      assert.equal(csi.statuses.length, 1);
    } finally {
      await watcher.stop();
      for (const s of [csi, dra, old]) s.stop();
    }
  });
});
