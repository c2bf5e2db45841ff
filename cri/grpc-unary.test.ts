/**
 * The HTTP/2 unary client against a plain `node:http2` server on a unix socket, so that every
 * answer (trailers, trailers-only, HTTP errors, resets, oversized or compressed messages, a
 * connection that dies) can be shaped byte by byte. Through `CriTransport` where the error class
 * matters, through `UnaryChannel` where only the gRPC code does.
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import http2 from 'node:http2';
import type { Http2Server, Http2Session, IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { status } from '@grpc/grpc-js';
import { isCriCancelled, isCriDeadline, isCriError, isCriNotFound, isCriUnavailable } from './errors.js';
import { GrpcCallError, GrpcCode, MAX_MESSAGE_BYTES, REDIAL_HOLD_OFF_MS, UnaryChannel } from './grpc-unary.js';
import { criMethod } from './proto.js';
import { CriTransport } from './transport.js';

const version = criMethod('RuntimeService', 'Version');
const { NGHTTP2_CANCEL, NGHTTP2_NO_ERROR } = http2.constants;

type Handler = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => void;

/** A raw HTTP/2 server; each test sets `handler`. */
interface RawServer {
  readonly server: Http2Server;
  readonly sessions: Http2Session[];
  /** The sockets under the sessions, in the same order (to break one as a crash would). */
  readonly sockets: Socket[];
  handler: Handler;
  close(): Promise<void>;
}

async function startRawServer(socketPath: string): Promise<RawServer> {
  const server = http2.createServer();
  const raw: RawServer = {
    server,
    sessions: [],
    sockets: [],
    handler: (stream) => {
      stream.respond({ ':status': 404 }, { endStream: true });
    },
    close: async () => {
      for (const session of raw.sessions) session.destroy();
      await new Promise<void>((resolve) => server.close(() => { resolve(); }));
    },
  };
  server.on('connection', (socket: Socket) => raw.sockets.push(socket));
  server.on('session', (session) => raw.sessions.push(session));
  server.on('stream', (stream, headers) => {
    stream.on('error', () => undefined);
    raw.handler(stream, headers);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => { resolve(); });
  });
  return raw;
}

function grpcFrame(payload: Buffer, flag = 0): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flag;
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/** A well-formed OK answer: headers, one message, trailers. */
function answer(stream: ServerHttp2Stream, payload: Buffer): void {
  stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
  stream.on('wantTrailers', () => {
    stream.sendTrailers({ 'grpc-status': '0' });
  });
  stream.end(grpcFrame(payload));
}

function readBody(stream: ServerHttp2Stream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  return new Promise((resolve) => stream.on('end', () => { resolve(Buffer.concat(chunks)); }));
}

/** Resolves with the RST_STREAM code the server's stream closed with, or 'open' if it stays open for a second. */
function closedWith(stream: ServerHttp2Stream): Promise<number | 'open'> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => { resolve('open'); }, 1000);
    stream.on('close', () => {
      clearTimeout(timer);
      resolve(stream.rstCode ?? NGHTTP2_NO_ERROR);
    });
  });
}

const VERSION_ANSWER = { version: '0.1.0', runtimeName: 'containerd', runtimeVersion: '1.7', runtimeApiVersion: 'v1' };

function hasCode(code: number): (e: unknown) => boolean {
  return (e: unknown) => e instanceof GrpcCallError && e.code === code;
}

void describe('gRPC unary client on node:http2', () => {
  let dir: string;
  let socketPath: string;
  let raw: RawServer;
  let clock: number;
  let transport: CriTransport;
  let channel: UnaryChannel;

  const callVersion = (timeoutMs = 2000, signal?: AbortSignal): Promise<object> =>
    transport.call({ service: 'RuntimeService', method: 'Version', request: { version: '0.1.0' }, timeoutMs, signal }, (wire) => wire);
  const callRaw = (timeoutMs = 2000): Promise<Buffer> =>
    channel.call({ path: version.path, message: version.requestSerialize({ version: '0.1.0' }), timeoutMs });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nodelet-grpc-unary-'));
    socketPath = join(dir, 'cri.sock');
    raw = await startRawServer(socketPath);
  });

  after(async () => {
    await raw.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const connect = (): void => {
    clock = 1_000_000;
    transport = new CriTransport({ endpoint: `unix://${socketPath}`, now: () => clock });
    channel = new UnaryChannel({ socketPath, now: () => clock });
  };

  afterEach(() => {
    transport.close();
    channel.close();
  });

  void it('sends one length-prefixed message with the gRPC headers and decodes the one message answered', async () => {
    connect();
    let seen: { headers: IncomingHttpHeaders; body: Buffer } | undefined;
    raw.handler = (stream, headers) => {
      void readBody(stream).then((body) => {
        seen = { headers, body };
        answer(stream, version.responseSerialize(VERSION_ANSWER));
      });
    };
    assert.deepEqual(await callVersion(1500), VERSION_ANSWER);
    assert.equal(seen?.headers[':method'], 'POST');
    assert.equal(seen?.headers[':path'], '/runtime.v1.RuntimeService/Version');
    assert.equal(seen?.headers['content-type'], 'application/grpc');
    assert.equal(seen?.headers.te, 'trailers');
    assert.equal(seen?.headers['grpc-timeout'], '1500m');
    assert.match(String(seen?.headers['user-agent']), /^nodelet-cri\//);
    assert.deepEqual(seen?.body, grpcFrame(version.requestSerialize({ version: '0.1.0' })));
  });

  void it('takes the status from the trailers: NOT_FOUND is a CriNotFoundError with the decoded message', async () => {
    connect();
    raw.handler = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => {
        stream.sendTrailers({ 'grpc-status': '5', 'grpc-message': 'container %22c1%22 not found: 100%25 gone' });
      });
      stream.end();
    };
    await assert.rejects(callVersion(), (e: unknown) => isCriNotFound(e) && e.message === 'Version: container "c1" not found: 100% gone');
  });

  void it('takes the status from the headers of a trailers-only answer', async () => {
    connect();
    raw.handler = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '9', 'grpc-message': 'not running' }, { endStream: true });
    };
    await assert.rejects(callVersion(), (e: unknown) => isCriError(e) && e.code === status.FAILED_PRECONDITION && e.message === 'Version: not running');
  });

  void it('maps an HTTP status other than 200 to its gRPC code', async () => {
    connect();
    const cases: [number, number][] = [[503, GrpcCode.UNAVAILABLE], [404, GrpcCode.UNIMPLEMENTED], [502, GrpcCode.UNAVAILABLE], [500, GrpcCode.UNKNOWN]];
    for (const [httpStatus, code] of cases) {
      raw.handler = (stream) => {
        stream.respond({ ':status': httpStatus, 'content-type': 'text/plain' });
        stream.end('nope');
      };
      await assert.rejects(callRaw(), hasCode(code), `HTTP ${httpStatus}`);
    }
    raw.handler = (stream) => {
      stream.respond({ ':status': 503 }, { endStream: true });
    };
    await assert.rejects(callVersion(), (e: unknown) => isCriUnavailable(e));
  });

  void it('refuses an OK status without exactly one message, and a status that is missing', async () => {
    connect();
    raw.handler = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '0' }, { endStream: true });
    };
    await assert.rejects(callRaw(), hasCode(GrpcCode.INTERNAL), 'no message');
    raw.handler = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => { stream.sendTrailers({ 'grpc-status': '0' }); });
      stream.end(Buffer.concat([grpcFrame(Buffer.from('a')), grpcFrame(Buffer.from('b'))]));
    };
    await assert.rejects(callRaw(), hasCode(GrpcCode.INTERNAL), 'two messages');
    raw.handler = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      stream.end(grpcFrame(Buffer.from('a')));
    };
    await assert.rejects(callRaw(), hasCode(GrpcCode.INTERNAL), 'no grpc-status');
  });

  void it('gives up at the deadline with CriDeadlineError and cancels the stream', async () => {
    connect();
    let reset: Promise<number | 'open'> | undefined;
    raw.handler = (stream) => {
      reset = closedWith(stream);
    };
    const started = Date.now();
    await assert.rejects(callVersion(150), (e: unknown) => isCriDeadline(e));
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 140 && elapsed < 1000, `failed after ${elapsed} ms`);
    assert.equal(await reset, NGHTTP2_CANCEL);
  });

  void it('cancels the stream when the signal aborts, with CriCancelledError, and leaves no listener behind', async () => {
    connect();
    let reset: Promise<number | 'open'> | undefined;
    raw.handler = (stream) => {
      reset = closedWith(stream);
    };
    const controller = new AbortController();
    const calling = callVersion(5000, controller.signal);
    for (let waited = 0; reset === undefined && waited < 3000; waited += 10) await sleep(10);
    controller.abort(new Error('lost the job lock'));
    await assert.rejects(calling, (e: unknown) => isCriCancelled(e) && e.message.includes('lost the job lock'));
    assert.equal(await reset, NGHTTP2_CANCEL);

    // Many calls sharing one signal: each removes its listener when it completes.
    raw.handler = (stream) => {
      answer(stream, version.responseSerialize(VERSION_ANSWER));
    };
    const shared = new AbortController();
    for (let round = 0; round < 20; round++) {
      await Promise.all(Array.from({ length: 50 }, () => callVersion(2000, shared.signal)));
    }
    assert.equal(getEventListeners(shared.signal, 'abort').length, 0);
  });

  void it('fails fast with CriUnavailableError while nothing listens, holds off redialling, then reconnects', async () => {
    const downPath = join(dir, 'down.sock');
    clock = 5_000;
    const down = new CriTransport({ endpoint: downPath, now: () => clock });
    const started = Date.now();
    let later: RawServer | undefined;
    try {
      const call = (): Promise<object> => down.call({ service: 'RuntimeService', method: 'Version', request: {}, timeoutMs: 5000 }, (w) => w);
      const dialFailure = await call().then(() => undefined, (e: unknown) => e);
      assert.ok(isCriUnavailable(dialFailure), String(dialFailure));
      assert.match(dialFailure.message, /ENOENT/);
      assert.ok(Date.now() - started < 1000, 'failed without waiting for the deadline');
      later = await startRawServer(downPath);
      later.handler = (stream) => {
        answer(stream, version.responseSerialize(VERSION_ANSWER));
      };
      clock += REDIAL_HOLD_OFF_MS - 50;
      // The same message as the dial's, so that the log de-duplication sees one failure.
      await assert.rejects(call(), (e: unknown) => isCriUnavailable(e) && e.message === dialFailure.message, 'still within the hold-off');
      assert.equal(later.sessions.length, 0, 'no dial within the hold-off');
      clock += 50;
      assert.deepEqual(await call(), VERSION_ANSWER);
      assert.equal(later.sessions.length, 1);
    } finally {
      down.close();
      await later?.close();
    }
  });

  const killCases: [string, () => void][] = [
    // Node's server resets the streams (NO_ERROR) and sends a GOAWAY before closing the socket.
    ['the server destroys its session', () => { raw.sessions[0]?.destroy(); }],
    // A runtime that crashes sends nothing: the socket just closes.
    ['the runtime crashes', () => { raw.sockets[0]?.destroy(); }],
  ];
  for (const [what, kill] of killCases) {
    void it(`fails the calls in flight with CriUnavailableError when ${what}, and dials again for the next`, async () => {
      connect();
      raw.sessions.length = 0;
      raw.sockets.length = 0;
      let arrived = 0;
      raw.handler = () => {
        arrived += 1;
      };
      const calls = [callVersion(5000), callVersion(5000)];
      for (let waited = 0; arrived < 2 && waited < 3000; waited += 10) await sleep(10);
      assert.equal(raw.sessions.length, 1);
      kill();
      const outcomes = await Promise.allSettled(calls);
      assert.deepEqual(outcomes.map((o) => o.status === 'rejected' && isCriUnavailable(o.reason)), [true, true]);
      raw.handler = (stream) => {
        answer(stream, version.responseSerialize(VERSION_ANSWER));
      };
      assert.deepEqual(await callVersion(), VERSION_ANSWER);
      assert.equal(raw.sessions.length, 2, 'a new session');
    });
  }

  void it('dials a new session after a GOAWAY, and the call it covered still completes', async () => {
    connect();
    raw.sessions.length = 0;
    raw.handler = (stream) => {
      stream.session?.goaway(http2.constants.NGHTTP2_NO_ERROR, stream.id);
      setTimeout(() => { answer(stream, version.responseSerialize(VERSION_ANSWER)); }, 20);
    };
    assert.deepEqual(await callVersion(), VERSION_ANSWER);
    raw.handler = (stream) => {
      answer(stream, version.responseSerialize(VERSION_ANSWER));
    };
    assert.deepEqual(await callVersion(), VERSION_ANSWER);
    assert.equal(raw.sessions.length, 2);
  });

  void it('maps a stream reset by the server: REFUSED_STREAM to UNAVAILABLE, CANCEL to CANCELLED, others to INTERNAL', async () => {
    connect();
    const cases: [number, number][] = [
      [http2.constants.NGHTTP2_REFUSED_STREAM, GrpcCode.UNAVAILABLE],
      [http2.constants.NGHTTP2_CANCEL, GrpcCode.CANCELLED],
      [http2.constants.NGHTTP2_PROTOCOL_ERROR, GrpcCode.INTERNAL],
      [http2.constants.NGHTTP2_ENHANCE_YOUR_CALM, GrpcCode.RESOURCE_EXHAUSTED],
    ];
    for (const [rstCode, code] of cases) {
      raw.handler = (stream) => {
        stream.close(rstCode);
      };
      await assert.rejects(callRaw(), hasCode(code), `RST_STREAM ${rstCode}`);
    }
  });

  void it('refuses a message over 16 MiB with RESOURCE_EXHAUSTED as soon as its length is known', async () => {
    connect();
    let reset: Promise<number | 'open'> | undefined;
    raw.handler = (stream) => {
      reset = closedWith(stream);
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      const head = Buffer.alloc(5);
      head.writeUInt32BE(MAX_MESSAGE_BYTES + 1, 1);
      // The prefix and a little of the payload; the rest never comes, so only the length can decide.
      stream.write(Buffer.concat([head, Buffer.alloc(1024)]));
    };
    await assert.rejects(callRaw(5000), hasCode(GrpcCode.RESOURCE_EXHAUSTED));
    assert.equal(await reset, NGHTTP2_CANCEL);
  });

  void it('accepts a message of exactly 16 MiB', async () => {
    connect();
    raw.handler = (stream) => {
      answer(stream, Buffer.alloc(MAX_MESSAGE_BYTES, 7));
    };
    const message = await callRaw(10_000);
    assert.equal(message.length, MAX_MESSAGE_BYTES);
    assert.equal(message[MAX_MESSAGE_BYTES - 1], 7);
  });

  void it('refuses a compressed message with INTERNAL (no compression is ever offered)', async () => {
    connect();
    raw.handler = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-encoding': 'gzip' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => { stream.sendTrailers({ 'grpc-status': '0' }); });
      stream.end(grpcFrame(Buffer.from('compressed?'), 1));
    };
    await assert.rejects(callRaw(), hasCode(GrpcCode.INTERNAL));
  });

  void it('refuses an answer that is not gRPC', async () => {
    connect();
    raw.handler = (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'text/html' });
      stream.end('<html>');
    };
    await assert.rejects(callRaw(), hasCode(GrpcCode.INTERNAL));
  });

  void it('fails calls after close with CANCELLED, without dialling', async () => {
    connect();
    raw.sessions.length = 0;
    channel.close();
    await assert.rejects(callRaw(), hasCode(GrpcCode.CANCELLED));
    assert.equal(raw.sessions.length, 0);
  });

  void it('never keeps the process alive with an idle connection', async () => {
    raw.handler = (stream) => {
      answer(stream, version.responseSerialize(VERSION_ANSWER));
    };
    // A child process makes one call and then has nothing left to do: it must exit by itself.
    const script = [
      `import { UnaryChannel } from ${JSON.stringify(new URL('./grpc-unary.ts', import.meta.url).href)};`,
      `const channel = new UnaryChannel({ socketPath: ${JSON.stringify(socketPath)} });`,
      `const answer = await channel.call({ path: '/runtime.v1.RuntimeService/Version', message: Buffer.alloc(0), timeoutMs: 5000 });`,
      `console.log('answered', answer.length);`,
    ].join('\n');
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const verdict = await new Promise<number | null | 'still running'>((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve('still running');
      }, 8000);
      child.on('exit', (code) => {
        clearTimeout(timer);
        resolve(code);
      });
    });
    assert.equal(verdict, 0);
    assert.match(output, /^answered \d+/);
  });
});
