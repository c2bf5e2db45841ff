/**
 * A small stand-in for systemd-logind on a test bus (Debian's dbus-daemon), for graceful node
 * shutdown's tests: it owns `org.freedesktop.login1` and `org.freedesktop.systemd1` and answers
 * what nodelet (and the kubelet) ask of them, as logind does:
 *
 * - `Properties.Get(Manager, InhibitDelayMaxUSec)`: the delay, from `--inhibit-delay-max-sec`
 *   (logind's default 5 s) until a reload reads the drop-ins;
 * - `Manager.Inhibit(what, who, why, mode)`: a FIFO's write end as the lock (logind's own
 *   mechanism: the lock lasts while any copy of that descriptor is open);
 * - `Manager.ListInhibitors()`: the locks still held;
 * - systemd's `KillUnit("systemd-logind.service", _, SIGHUP)`: re-reads `InhibitDelayMaxSec` from
 *   the drop-in directory (`--conf-dir`, files in name order, the last value wins).
 *
 * The test drives it on its own interface, `org.nodelet.test.Logind` at the same path:
 * `PrepareForShutdown(b)` emits logind's signal; for true it then waits, as logind does before
 * going on, until no `delay` lock on shutdown is held or the delay has passed, and returns how long
 * it waited (µs) and whether the locks were released in time.
 *
 * Run: `node --import tsx test/doubles/logind/logind-standin.ts --bus ADDRESS --state-dir DIR
 * --conf-dir DIR [--inhibit-delay-max-sec N]`; prints `ready` once it owns its names.
 */
import { execFileSync } from 'node:child_process';
import { constants, mkdirSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DBusConnection, type ReceivedMessage } from '../../../util/dbus/connection.js';
import { MessageType, type DBusMessage } from '../../../util/dbus/message.js';
import type { DBusValue } from '../../../util/dbus/wire.js';

const LOGIND_PATH = '/org/freedesktop/login1';
const MANAGER = 'org.freedesktop.login1.Manager';
const CONTROL = 'org.nodelet.test.Logind';

export interface LogindStandInOptions {
  readonly busAddress: string;
  readonly stateDir: string;
  readonly confDir: string;
  readonly inhibitDelayMaxSec?: number;
}

interface Inhibitor {
  readonly what: string;
  readonly who: string;
  readonly why: string;
  readonly mode: string;
  held: boolean;
}

/** A running stand-in. */
export interface LogindStandIn {
  /** The locks still held. */
  inhibitors(): readonly Inhibitor[];
  delayMaxSec(): number;
  close(): void;
}

type Reply = { readonly signature: string; readonly body: readonly DBusValue[]; readonly fd?: number } | { readonly error: string; readonly message: string };

export async function startLogindStandIn(options: LogindStandInOptions): Promise<LogindStandIn> {
  const bus = await DBusConnection.open(options.busAddress);
  mkdirSync(options.stateDir, { recursive: true });
  const state = { delayMaxSec: options.inhibitDelayMaxSec ?? 5, inhibitors: [] as Inhibitor[], next: 0 };
  const held = (): Inhibitor[] => state.inhibitors.filter((i) => i.held);
  const releasedWaiters = new Set<() => void>();
  const onRelease = (): void => { for (const wake of releasedWaiters) wake(); };

  const inhibit = (what: string, who: string, why: string, mode: string): Reply => {
    const fifo = path.join(options.stateDir, `${state.next++}.ref`);
    rmSync(fifo, { force: true });
    execFileSync('mkfifo', [fifo]);
    const readFd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writeFd = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
    const inhibitor: Inhibitor = { what, who, why, mode, held: true };
    state.inhibitors.push(inhibitor);
    // EOF on the read end: every copy of the write end is closed, the lock is gone.
    const reader = new net.Socket({ fd: readFd, readable: true, writable: false });
    reader.on('end', () => { inhibitor.held = false; reader.destroy(); rmSync(fifo, { force: true }); onRelease(); });
    reader.on('error', () => undefined);
    reader.resume();
    return { signature: 'h', body: [0], fd: writeFd };
  };

  const reload = (): void => {
    let files: string[] = [];
    try {
      files = readdirSync(options.confDir).filter((f) => f.endsWith('.conf')).sort();
    } catch {
      return;
    }
    for (const file of files) {
      const match = /^InhibitDelayMaxSec=(\d+)\s*$/m.exec(readFileSync(path.join(options.confDir, file), 'utf8'));
      if (match !== null) state.delayMaxSec = Number(match[1]);
    }
  };

  const prepareForShutdown = async (start: boolean): Promise<Reply> => {
    bus.send({ type: MessageType.signal, path: LOGIND_PATH, interface: MANAGER, member: 'PrepareForShutdown', signature: 'b', body: [start] });
    if (!start) return { signature: 'tb', body: [0n, true] };
    const began = process.hrtime.bigint();
    const delayLocks = (): Inhibitor[] => held().filter((i) => i.mode === 'delay' && i.what.split(':').includes('shutdown'));
    const released = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => { releasedWaiters.delete(check); resolve(false); }, state.delayMaxSec * 1000);
      const check = (): void => {
        if (delayLocks().length > 0) return;
        clearTimeout(timer);
        releasedWaiters.delete(check);
        resolve(true);
      };
      releasedWaiters.add(check);
      check();
    });
    return { signature: 'tb', body: [(process.hrtime.bigint() - began) / 1000n, released] };
  };

  const handle = async (call: DBusMessage): Promise<Reply> => {
    const key = `${call.interface ?? ''}.${call.member ?? ''}`;
    const [a, b, c, d] = call.body.map((v) => (typeof v === 'string' || typeof v === 'boolean' || typeof v === 'number' ? v : undefined));
    if (key === 'org.freedesktop.DBus.Properties.Get' && a === MANAGER && b === 'InhibitDelayMaxUSec') return { signature: 'v', body: [{ signature: 't', value: BigInt(state.delayMaxSec) * 1_000_000n }] };
    if (key === `${MANAGER}.Inhibit` && typeof a === 'string' && typeof b === 'string' && typeof c === 'string' && typeof d === 'string') return inhibit(a, b, c, d);
    if (key === `${MANAGER}.ListInhibitors`) return { signature: 'a(ssssuu)', body: [held().map((i) => [i.what, i.who, i.why, i.mode, 0, 0])] };
    if (key === 'org.freedesktop.systemd1.Manager.KillUnit' && a === 'systemd-logind.service' && c === 1) {
      reload();
      return { signature: '', body: [] };
    }
    if (key === `${CONTROL}.PrepareForShutdown` && typeof a === 'boolean') return prepareForShutdown(a);
    return { error: 'org.freedesktop.DBus.Error.UnknownMethod', message: `the stand-in does not serve ${key}` };
  };

  const answer = async ({ message }: ReceivedMessage): Promise<void> => {
    if (message.type !== MessageType.methodCall) return;
    const reply = await handle(message);
    const to = { replySerial: message.serial, ...(message.sender === undefined ? {} : { destination: message.sender }) };
    if ('error' in reply) {
      bus.send({ type: MessageType.error, ...to, errorName: reply.error, signature: 's', body: [reply.message] });
      return;
    }
    if (reply.fd === undefined) {
      bus.send({ type: MessageType.methodReturn, ...to, signature: reply.signature, body: reply.body });
      return;
    }
    await sendWithFd(bus, { type: MessageType.methodReturn, ...to, signature: reply.signature, body: reply.body }, reply.fd);
  };
  bus.on('message', (received) => { void answer(received); });

  for (const name of ['org.freedesktop.login1', 'org.freedesktop.systemd1']) {
    const owned = await bus.call({ destination: 'org.freedesktop.DBus', path: '/org/freedesktop/DBus', interface: 'org.freedesktop.DBus', member: 'RequestName', signature: 'su', body: [name, 4] });
    if (owned.message.body[0] !== 1) throw new Error(`could not own ${name} (RequestName answered ${JSON.stringify(owned.message.body[0])})`);
  }
  return { inhibitors: held, delayMaxSec: () => state.delayMaxSec, close: () => { bus.close(); } };
}

/** Sends a reply carrying `fd`, then closes the stand-in's own copy (the receiver's copy is the lock). */
async function sendWithFd(bus: DBusConnection, message: Omit<DBusMessage, 'serial'>, fd: number): Promise<void> {
  const handle = bus.wrapFd(fd);
  try {
    await bus.sendWithFd(message, handle);
  } finally {
    handle.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { bus: { type: 'string' }, 'state-dir': { type: 'string' }, 'conf-dir': { type: 'string' }, 'inhibit-delay-max-sec': { type: 'string', default: '5' } } });
  const { bus, 'state-dir': stateDir, 'conf-dir': confDir } = values;
  if (bus === undefined || stateDir === undefined || confDir === undefined) throw new Error('usage: logind-standin --bus ADDRESS --state-dir DIR --conf-dir DIR [--inhibit-delay-max-sec N]');
  const standIn = await startLogindStandIn({ busAddress: bus, stateDir, confDir, inhibitDelayMaxSec: Number(values['inhibit-delay-max-sec']) });
  process.stdout.write('ready\n');
  await new Promise<void>((resolve) => { process.once('SIGTERM', resolve); process.once('SIGINT', resolve); });
  standIn.close();
}

if (process.argv[1] !== undefined && import.meta.filename === path.resolve(process.argv[1])) {
  main().catch((error: unknown) => {
    process.stderr.write(`logind-standin: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  });
}
