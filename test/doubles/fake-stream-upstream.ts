/**
 * A stand-in for the runtime's streaming server, on 127.0.0.1: it records each request head it
 * gets and answers as told: `upgrade` switches protocols and then echoes every byte back (in
 * upper case, so an echo cannot be mistaken for the proxy looping the client's bytes back itself);
 * `refuse` answers 404 with a body and keeps the connection open (as a keep-alive server does),
 * `ok` answers a plain 200. It counts the connections that are still open.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/** How the upstream answers. */
export type UpstreamMode = 'upgrade' | 'refuse' | 'ok';

/** One request as the upstream read it: the request line and the header lines. */
export interface UpstreamRequest {
  readonly requestLine: string;
  readonly headers: readonly string[];
}

export const REFUSAL_BODY = 'token not found in the streaming cache';

export class FakeStreamUpstream {
  mode: UpstreamMode = 'upgrade';
  readonly requests: UpstreamRequest[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly server: Server = createServer((socket) => {
    this.accept(socket);
  });
  private port = 0;

  /** Connections the upstream still has open. */
  get openConnections(): number {
    return this.sockets.size;
  }

  /** A streaming URL as the runtime would return it. */
  url(path = '/exec/tok123'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  start(): Promise<void> {
    return new Promise((resolve) => {
      this.server.listen(0, '127.0.0.1', () => {
        this.port = (this.server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    return new Promise((resolve) => {
      this.server.close(() => {
        resolve();
      });
    });
  }

  private accept(socket: Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      const [requestLine = '', ...headers] = buffered.subarray(0, end).toString('latin1').split('\r\n');
      this.requests.push({ requestLine, headers });
      this.answer(socket, buffered.subarray(end + 4));
    };
    socket.on('data', onData);
  }

  private answer(socket: Socket, early: Buffer): void {
    if (this.mode === 'refuse') {
      socket.write(`HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${REFUSAL_BODY.length}\r\n\r\n${REFUSAL_BODY}`);
      return;
    }
    if (this.mode === 'ok') {
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
      return;
    }
    socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n');
    const echo = (chunk: Buffer): void => {
      socket.write(chunk.toString('latin1').toUpperCase());
    };
    if (early.length > 0) echo(early);
    socket.on('data', echo);
  }
}
