/**
 * systemd-logind as graceful node shutdown uses it, over the system bus (the kubelet's
 * nodeshutdown/systemd): the longest delay logind grants an inhibitor (`InhibitDelayMaxUSec`), a
 * `delay` inhibitor lock on `shutdown` (a descriptor: the lock lasts while it is open), the
 * `PrepareForShutdown` signal (true: shutdown starts, false: it was cancelled), and raising the
 * delay with a logind drop-in and a reload (systemd's `KillUnit` with SIGHUP, as the kubelet does).
 */
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DBusConnection, type ReceivedMessage } from '../../util/dbus/connection.js';
import { MessageType } from '../../util/dbus/message.js';
import type { FdHandle } from '../../util/dbus/unix-fd-socket.js';

const LOGIND = { destination: 'org.freedesktop.login1', path: '/org/freedesktop/login1' } as const;
const MANAGER = 'org.freedesktop.login1.Manager';
const SHUTDOWN_MATCH = `type='signal',interface='${MANAGER}',member='PrepareForShutdown',path='${LOGIND.path}'`;

/** Where the drop-in raising logind's delay goes (the kubelet writes 99-kubelet.conf there). */
export const LOGIND_CONF_DIR = '/etc/systemd/logind.conf.d';
/** After the kubelet's file, so on a host that ran the kubelet before, nodelet's value wins. */
export const LOGIND_DROP_IN = '99-nodelet.conf';

/** A held `delay` inhibitor lock; `release()` closes its descriptor (logind then lets shutdown go on). */
export interface InhibitLock {
  release(): void;
}

/** A reply that is not what logind's interface promises. */
export class LogindProtocolError extends Error {
  override readonly name = 'LogindProtocolError';
}

/** One session with logind over one bus connection. */
export interface Logind {
  /** logind's `InhibitDelayMaxUSec`, in milliseconds. */
  inhibitDelayMs(): Promise<number>;
  /** Takes a `delay` lock on `shutdown`. */
  inhibitShutdown(): Promise<InhibitLock>;
  /** Subscribes to `PrepareForShutdown`; `onEvent(true)` when shutdown starts, `(false)` when cancelled. */
  watchShutdown(onEvent: (shuttingDown: boolean) => void): Promise<void>;
  /** Writes the drop-in setting `InhibitDelayMaxSec` and asks systemd to reload logind. */
  raiseInhibitDelay(seconds: number): Promise<void>;
  /** Resolves when the bus connection ends (closed by us or lost). */
  readonly ended: Promise<void>;
  close(): void;
}

/** Options: the bus address and the drop-in directory (tests point both elsewhere). */
export interface LogindOptions {
  readonly busAddress: string;
  readonly confDir?: string;
  readonly signal?: AbortSignal;
}

/** Connects to the system bus. @throws DBusConnectionError */
export async function connectLogind(options: LogindOptions): Promise<Logind> {
  const bus = await DBusConnection.open(options.busAddress, options.signal);
  const ended = new Promise<void>((resolve) => { bus.once('close', resolve); });
  return {
    ended,
    close: () => { bus.close(); },
    inhibitDelayMs: async () => inhibitDelayMs(bus),
    inhibitShutdown: async () => inhibitShutdown(bus),
    watchShutdown: async (onEvent) => {
      bus.on('message', (received) => { shutdownEvent(received, onEvent); });
      await bus.call({ destination: 'org.freedesktop.DBus', path: '/org/freedesktop/DBus', interface: 'org.freedesktop.DBus', member: 'AddMatch', signature: 's', body: [SHUTDOWN_MATCH] });
    },
    raiseInhibitDelay: async (seconds) => {
      await writeDropIn(options.confDir ?? LOGIND_CONF_DIR, seconds);
      await bus.call({ destination: 'org.freedesktop.systemd1', path: '/org/freedesktop/systemd1', interface: 'org.freedesktop.systemd1.Manager', member: 'KillUnit', signature: 'ssi', body: ['systemd-logind.service', 'all', 1] });
    },
  };
}

async function inhibitDelayMs(bus: DBusConnection): Promise<number> {
  const reply = await bus.call({ ...LOGIND, interface: 'org.freedesktop.DBus.Properties', member: 'Get', signature: 'ss', body: [MANAGER, 'InhibitDelayMaxUSec'] });
  const variant = reply.message.body[0];
  if (typeof variant !== 'object' || Array.isArray(variant) || !('value' in variant) || typeof variant.value !== 'bigint') {
    throw new LogindProtocolError('InhibitDelayMaxUSec from logind is not a uint64');
  }
  return Number(variant.value / 1000n);
}

async function inhibitShutdown(bus: DBusConnection): Promise<InhibitLock> {
  const reply = await bus.call({ ...LOGIND, interface: MANAGER, member: 'Inhibit', signature: 'ssss', body: ['shutdown', 'nodelet', 'nodelet needs time to handle node shutdown', 'delay'] });
  const [fd, ...extra] = reply.fds;
  for (const other of extra) other.close();
  if (fd === undefined) throw new LogindProtocolError('logind answered Inhibit without a file descriptor');
  return lockOf(fd);
}

function lockOf(fd: FdHandle): InhibitLock {
  let released = false;
  return {
    release: () => {
      if (released) return;
      released = true;
      fd.close();
    },
  };
}

function shutdownEvent(received: ReceivedMessage, onEvent: (shuttingDown: boolean) => void): void {
  const { message } = received;
  for (const fd of received.fds) fd.close();
  if (message.type !== MessageType.signal || message.interface !== MANAGER || message.member !== 'PrepareForShutdown') return;
  const [active] = message.body;
  if (typeof active === 'boolean') onEvent(active);
}

/** The drop-in, written whole or not at all (a reload must never read half a file). */
async function writeDropIn(dir: string, seconds: number): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const file = path.join(dir, LOGIND_DROP_IN);
  const temporary = `${file}.tmp`;
  await writeFile(temporary, `# nodelet's logind override (graceful node shutdown)\n[Login]\nInhibitDelayMaxSec=${seconds}\n`, { mode: 0o644 });
  await rename(temporary, file);
}
