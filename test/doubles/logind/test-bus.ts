/**
 * A private D-Bus system bus for a test: Debian's `dbus-daemon` with test/doubles/logind/bus.conf.in,
 * its socket in the test's directory. The address is ready to use when this resolves.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface TestBus {
  /** `unix:path=…`, for `DBUS_SYSTEM_BUS_ADDRESS`. */
  readonly address: string;
  stop(): Promise<void>;
}

export async function startTestBus(dir: string): Promise<TestBus> {
  const socket = path.join(dir, 'system_bus_socket');
  const config = path.join(dir, 'bus.conf');
  writeFileSync(config, readFileSync(path.join(import.meta.dirname, 'bus.conf.in'), 'utf8').replaceAll('@SOCKET@', socket));
  const daemon: ChildProcess = spawn('dbus-daemon', [`--config-file=${config}`, '--nofork', '--print-address'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  daemon.stderr?.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
  const address = await new Promise<string>((resolve, reject) => {
    daemon.stdout?.once('data', (chunk: Buffer) => { resolve(chunk.toString().trim()); });
    daemon.once('exit', (code) => { reject(new Error(`dbus-daemon exited ${String(code)}: ${stderr}`)); });
    daemon.once('error', reject);
  });
  return {
    address,
    stop: async () => {
      if (daemon.exitCode !== null) return;
      daemon.kill('SIGTERM');
      await once(daemon, 'exit');
    },
  };
}
