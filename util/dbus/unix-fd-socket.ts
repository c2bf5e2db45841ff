/**
 * A Unix stream socket that can receive and send file descriptors (`SCM_RIGHTS`), which D-Bus
 * uses for its `h` type: logind hands an inhibitor lock to its holder as the write end of a FIFO,
 * and the lock lasts exactly as long as that descriptor stays open.
 *
 * Node.js has no public API for descriptor passing on an arbitrary socket. libuv does it on pipes
 * opened in IPC mode (what `child_process` uses for `send(message, handle)`), and Node.js exposes
 * such pipes through its `pipe_wrap` binding, on `process.binding`'s list of bindings kept for
 * compatibility (documented deprecation DEP0111, no runtime warning; checked on Node.js 20 and 24,
 * the versions the repository and the image run). A received descriptor arrives as a
 * `pendingHandle` on the socket's handle with the bytes it came with; a FIFO or socket becomes a
 * pipe handle that owns the descriptor until it is closed. Everything here is typed narrowly: the
 * rest of the agent sees {@link FdSocket} only.
 */
import net from 'node:net';

/** A descriptor received or to be sent, owned until `close()`. */
export interface FdHandle {
  readonly fd: number;
  close(): void;
}

/** The socket, and the descriptors that came with its bytes. */
export interface FdSocket {
  readonly socket: net.Socket;
  /** The descriptor that arrived with the last chunk of bytes, once; undefined when none did. */
  takeReceived(): FdHandle | undefined;
  /** Writes `bytes` with `handle`'s descriptor attached (the kernel duplicates it). */
  writeWithHandle(bytes: Buffer, handle: FdHandle): Promise<void>;
  /** A handle owning `fd` (a FIFO or socket), to send with {@link writeWithHandle}. */
  wrapFd(fd: number): FdHandle;
}

/** A socket could not be connected. */
export class FdSocketConnectError extends Error {
  override readonly name = 'FdSocketConnectError';
  constructor(
    readonly path: string,
    readonly status: number,
  ) {
    super(`connect ${path}: ${status < 0 ? `errno ${-status}` : String(status)}`);
  }
}

interface PipeHandle extends FdHandle {
  connect(req: PipeConnectRequest, path: string): number;
  open(fd: number): number;
  writeBuffer(req: WriteRequest, bytes: Buffer, sendHandle?: PipeHandle): number;
  pendingHandle?: PipeHandle | null;
}
interface PipeConnectRequest {
  oncomplete: (status: number) => void;
}
interface WriteRequest {
  oncomplete: (status: number) => void;
}
interface PipeBinding {
  Pipe: new (type: number) => PipeHandle;
  PipeConnectWrap: new () => PipeConnectRequest;
  constants: { SOCKET: number; IPC: number };
}
interface StreamBinding {
  WriteWrap: new () => WriteRequest;
}

/** `process.binding`, typed `unknown`; the shapes above are what Node.js 20 and 24 provide. */
function binding(name: 'pipe_wrap' | 'stream_wrap'): unknown {
  const legacy = process as unknown as { binding: (this: NodeJS.Process, name: string) => unknown };
  return legacy.binding.call(process, name);
}

/** Connects to the Unix socket at `path` in descriptor-passing mode. */
export function connectFdSocket(path: string): Promise<FdSocket> {
  const pipes = binding('pipe_wrap') as PipeBinding;
  const handle = new pipes.Pipe(pipes.constants.IPC);
  return new Promise((resolve, reject) => {
    const request = new pipes.PipeConnectWrap();
    request.oncomplete = (status) => {
      if (status !== 0) {
        handle.close();
        reject(new FdSocketConnectError(path, status));
        return;
      }
      resolve(fdSocketOf(handle, pipes));
    };
    const status = handle.connect(request, path);
    if (status !== 0) {
      handle.close();
      reject(new FdSocketConnectError(path, status));
    }
  });
}

function fdSocketOf(handle: PipeHandle, pipes: PipeBinding): FdSocket {
  // net.Socket reads and writes through the handle; only descriptor passing goes around it.
  const socket = new net.Socket({ handle } as net.SocketConstructorOpts);
  return {
    socket,
    takeReceived: () => {
      const received = handle.pendingHandle ?? undefined;
      handle.pendingHandle = null;
      return received;
    },
    writeWithHandle: (bytes, sendHandle) => writeWithHandle(handle, bytes, sendHandle as PipeHandle),
    wrapFd: (fd) => {
      const wrapped = new pipes.Pipe(pipes.constants.SOCKET);
      const status = wrapped.open(fd);
      if (status !== 0) throw new Error(`cannot wrap descriptor ${fd}: errno ${-status}`);
      return wrapped;
    },
  };
}

function writeWithHandle(handle: PipeHandle, bytes: Buffer, sendHandle: PipeHandle): Promise<void> {
  const { WriteWrap } = binding('stream_wrap') as StreamBinding;
  return new Promise((resolve, reject) => {
    const request = new WriteWrap();
    // A write that carries a descriptor always completes later (libuv's uv_write2, never a try-write).
    request.oncomplete = (status) => {
      if (status === 0) resolve();
      else reject(new Error(`write with a descriptor: errno ${-status}`));
    };
    const status = handle.writeBuffer(request, bytes, sendHandle);
    if (status !== 0) reject(new Error(`write with a descriptor: errno ${-status}`));
  });
}
