/**
 * A D-Bus client connection to a message bus (the system bus, where logind is): SASL `EXTERNAL`
 * authentication with the process's uid, descriptor passing negotiated, `Hello` for a unique name,
 * then method calls matched to their replies by serial, and every other incoming message (signals,
 * calls made to us) handed to the listeners. Only `unix:path=` addresses, the system bus's.
 */
import { EventEmitter } from 'node:events';
import { encodeMessage, decodeMessage, messageLength, MessageType, type DBusMessage } from './message.js';
import { connectFdSocket, type FdHandle, type FdSocket } from './unix-fd-socket.js';
import type { DBusValue } from './wire.js';

/** The system bus when `DBUS_SYSTEM_BUS_ADDRESS` is not set (the specification's default). */
export const DEFAULT_SYSTEM_BUS_ADDRESS = 'unix:path=/var/run/dbus/system_bus_socket';

/** An error reply (`org.freedesktop.DBus.Error.*` or the service's own). */
export class DBusError extends Error {
  override readonly name = 'DBusError';
  constructor(
    readonly errorName: string,
    detail: string,
  ) {
    super(`${errorName}: ${detail}`);
  }
}

/** The bus could not be reached, refused us, or went away. */
export class DBusConnectionError extends Error {
  override readonly name = 'DBusConnectionError';
}

/** A received message with the descriptors it carried (the receiver owns them). */
export interface ReceivedMessage {
  readonly message: DBusMessage;
  readonly fds: readonly FdHandle[];
}

/** What a method call names. */
export interface MethodCall {
  readonly destination: string;
  readonly path: string;
  readonly interface: string;
  readonly member: string;
  readonly signature?: string;
  readonly body?: readonly DBusValue[];
}

const DEFAULT_CALL_TIMEOUT_MS = 25_000; // libdbus's default reply timeout

/** The socket path of a `unix:path=…` address (the first of a `;` list that is one). */
export function socketPathOf(address: string): string {
  for (const entry of address.split(';')) {
    const [transport, params = ''] = entry.split(/:(.*)/s);
    if (transport !== 'unix') continue;
    for (const param of params.split(',')) {
      const [key, value] = param.split(/=(.*)/s);
      if (key === 'path' && value !== undefined && value !== '') return decodeURIComponent(value);
    }
  }
  throw new DBusConnectionError(`no unix:path= in D-Bus address "${address}"`);
}

/** An open, authenticated connection. */
export class DBusConnection extends EventEmitter<{ message: [ReceivedMessage]; close: [] }> {
  private serial = 0;
  private pending = new Map<number, { resolve: (r: ReceivedMessage) => void; reject: (e: Error) => void }>();
  private buffer: Buffer = Buffer.alloc(0);
  private readonly fds: FdHandle[] = [];
  private closed = false;
  /** The bus's name for us (`:1.42`), from `Hello`. */
  uniqueName = '';

  private constructor(private readonly transport: FdSocket) {
    super();
  }

  /** Connects, authenticates and says Hello. @throws DBusConnectionError */
  static async open(address: string, signal?: AbortSignal): Promise<DBusConnection> {
    const path = socketPathOf(address);
    let transport: FdSocket;
    try {
      transport = await connectFdSocket(path);
    } catch (error) {
      throw new DBusConnectionError(`D-Bus at ${path}: ${error instanceof Error ? error.message : String(error)}`);
    }
    const connection = new DBusConnection(transport);
    const onAbort = (): void => { connection.close(); };
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await authenticate(transport, signal);
      connection.listen();
      const hello = await connection.call({ destination: 'org.freedesktop.DBus', path: '/org/freedesktop/DBus', interface: 'org.freedesktop.DBus', member: 'Hello' });
      connection.uniqueName = stringAt(hello.message.body, 0);
      return connection;
    } catch (error) {
      connection.close();
      throw error instanceof DBusError || error instanceof DBusConnectionError ? error : new DBusConnectionError(`D-Bus at ${path}: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Calls a method and resolves with its reply. @throws DBusError on an error reply, DBusConnectionError when the bus goes. */
  call(call: MethodCall, timeoutMs = DEFAULT_CALL_TIMEOUT_MS): Promise<ReceivedMessage> {
    const serial = this.nextSerial();
    const reply = new Promise<ReceivedMessage>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(serial);
        reject(new DBusError('org.freedesktop.DBus.Error.NoReply', `no reply to ${call.interface}.${call.member} in ${timeoutMs} ms`));
      }, timeoutMs);
      const settle = <T>(f: (value: T) => void) => (value: T): void => { clearTimeout(timer); this.pending.delete(serial); f(value); };
      this.pending.set(serial, { resolve: settle(resolve), reject: settle(reject) });
    });
    this.send({ type: MessageType.methodCall, serial, ...call, signature: call.signature ?? '', body: call.body ?? [] });
    return reply;
  }

  /** Sends a message (a signal, a reply). Returns the serial used. */
  send(message: Omit<DBusMessage, 'serial'> & { serial?: number }): number {
    if (this.closed) throw new DBusConnectionError('the D-Bus connection is closed');
    const serial = message.serial ?? this.nextSerial();
    this.transport.socket.write(encodeMessage({ ...message, serial }));
    return serial;
  }

  /** Sends a message carrying one descriptor (a `h` value 0); resolves once written (the kernel holds its copy). */
  async sendWithFd(message: Omit<DBusMessage, 'serial'>, fd: FdHandle): Promise<number> {
    if (this.closed) throw new DBusConnectionError('the D-Bus connection is closed');
    const serial = this.nextSerial();
    await this.transport.writeWithHandle(encodeMessage({ ...message, serial, unixFds: 1 }), fd);
    return serial;
  }

  /** A handle owning `fd` (a FIFO or socket), to send with {@link sendWithFd}. */
  wrapFd(fd: number): FdHandle {
    return this.transport.wrapFd(fd);
  }

  /** Closes the connection; calls in flight fail, descriptors not handed out are closed. */
  close(): void {
    if (this.closed) return;
    this.fail(new DBusConnectionError('the D-Bus connection closed'));
  }

  get isClosed(): boolean {
    return this.closed;
  }

  private nextSerial(): number {
    this.serial = this.serial >= 0xffff_fffe ? 1 : this.serial + 1;
    return this.serial;
  }

  private listen(): void {
    const { socket } = this.transport;
    socket.on('data', (chunk: Buffer) => { this.receive(chunk); });
    socket.on('close', () => { this.fail(new DBusConnectionError('the bus closed the D-Bus connection')); });
    socket.on('error', (error) => { this.fail(error); });
  }

  private receive(chunk: Buffer): void {
    const fd = this.transport.takeReceived();
    if (fd !== undefined) this.fds.push(fd);
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    try {
      for (let length = messageLength(this.buffer); length !== undefined && this.buffer.length >= length; length = messageLength(this.buffer)) {
        const message = decodeMessage(this.buffer.subarray(0, length));
        this.buffer = this.buffer.subarray(length);
        this.deliver({ message, fds: this.fds.splice(0, message.unixFds ?? 0) });
      }
    } catch (error) {
      // A stream that cannot be framed cannot be resynchronised.
      this.fail(error);
    }
  }

  private deliver(received: ReceivedMessage): void {
    const { message } = received;
    const waiter = message.replySerial === undefined ? undefined : this.pending.get(message.replySerial);
    if (waiter !== undefined && message.type === MessageType.methodReturn) waiter.resolve(received);
    else if (waiter !== undefined && message.type === MessageType.error) {
      closeAll(received.fds);
      waiter.reject(new DBusError(message.errorName ?? 'org.freedesktop.DBus.Error.Failed', stringAt(message.body, 0)));
    } else if (this.listenerCount('message') > 0) this.emit('message', received);
    else closeAll(received.fds);
  }

  private fail(error: unknown): void {
    const reason = error instanceof DBusConnectionError ? error : new DBusConnectionError(error instanceof Error ? error.message : String(error));
    const waiters = [...this.pending.values()];
    this.pending.clear();
    for (const waiter of waiters) waiter.reject(reason);
    closeAll(this.fds.splice(0));
    this.closed = true;
    this.transport.socket.destroy();
    if (this.closeEmitted) return;
    this.closeEmitted = true;
    this.emit('close');
  }

  private closeEmitted = false;
}

/** The body's string at `index`, or '' (an error's message, Hello's name). */
function stringAt(body: readonly DBusValue[], index: number): string {
  const value = body[index];
  return typeof value === 'string' ? value : '';
}

function closeAll(fds: readonly FdHandle[]): void {
  for (const fd of fds) fd.close();
}

/** SASL: `EXTERNAL` with our uid, then descriptor passing, then `BEGIN`. */
async function authenticate(transport: FdSocket, signal?: AbortSignal): Promise<void> {
  const lines = lineReader(transport.socket, signal);
  const uid = Buffer.from(String(process.getuid?.() ?? 0), 'ascii').toString('hex');
  transport.socket.write(`\0AUTH EXTERNAL ${uid}\r\n`);
  const ok = await lines.next();
  if (!ok.startsWith('OK ')) throw new DBusConnectionError(`the bus refused EXTERNAL authentication: ${ok}`);
  transport.socket.write('NEGOTIATE_UNIX_FD\r\n');
  const agree = await lines.next();
  if (agree !== 'AGREE_UNIX_FD') throw new DBusConnectionError(`the bus does not pass file descriptors: ${agree}`);
  lines.stop();
  transport.socket.write('BEGIN\r\n');
}

/** Reads `\r\n`-terminated lines from the socket until stopped. */
function lineReader(socket: FdSocket['socket'], signal?: AbortSignal): { next(): Promise<string>; stop(): void } {
  let text = '';
  let waiting: { resolve: (line: string) => void; reject: (e: Error) => void } | undefined;
  const flush = (): void => {
    const end = text.indexOf('\r\n');
    if (end === -1 || waiting === undefined) return;
    const line = text.slice(0, end);
    text = text.slice(end + 2);
    const w = waiting;
    waiting = undefined;
    w.resolve(line);
  };
  const onData = (chunk: Buffer): void => { text += chunk.toString('latin1'); flush(); };
  const onEnd = (): void => { waiting?.reject(new DBusConnectionError('the bus closed the connection during authentication')); };
  socket.on('data', onData);
  socket.once('close', onEnd);
  signal?.addEventListener('abort', onEnd, { once: true });
  return {
    next: () => new Promise<string>((resolve, reject) => { waiting = { resolve, reject }; flush(); }),
    stop: () => { socket.off('data', onData); socket.off('close', onEnd); signal?.removeEventListener('abort', onEnd); },
  };
}
