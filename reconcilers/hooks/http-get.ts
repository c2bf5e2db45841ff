/**
 * One HTTP(S) GET for an httpGet lifecycle hook: resolves with the response's status code once the
 * body is read (and discarded), rejects on a transport error, on `timeoutMs` of silence, or when
 * `signal` aborts (the request is destroyed). HTTPS does not verify the certificate, as the
 * kubelet's lifecycle client does not. Redirects are not followed: the first answer is the answer.
 *
 * An HTTPS request whose server answers in plain HTTP rejects with
 * {@link HttpResponseToHttpsClientError}, decided as Go's transport decides it: the TLS handshake
 * failed and the first bytes the server sent were `HTTP/` (the connection is read through a small
 * stream that keeps them), never by the TLS library's error text.
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { Duplex } from 'node:stream';
import tls from 'node:tls';
import { timerMs } from '../../util/clock.js';

export interface HttpGetRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal | undefined;
}

/** The request stayed silent for its whole timeout. */
export class HttpHookTimeoutError extends Error {
  override readonly name = 'HttpHookTimeoutError';
}

/** The server answered an HTTPS request in plain HTTP (Go's `http: server gave HTTP response to HTTPS client`). */
export class HttpResponseToHttpsClientError extends Error {
  override readonly name = 'HttpResponseToHttpsClientError';
  constructor(options?: ErrorOptions) {
    super('http: server gave HTTP response to HTTPS client', options);
  }
}

export function isHttpResponseToHttpsClient(error: unknown): error is HttpResponseToHttpsClientError {
  return error instanceof HttpResponseToHttpsClientError;
}

/** Go's check: a TLS record header that reads `HTTP/` is a plain HTTP answer. */
const HTTP_ANSWER = 'HTTP/';

/** A TCP connection as a stream that keeps the first bytes the server sent. */
function peekingConnection(host: string, port: number): { readonly stream: Duplex; firstBytes(): string } {
  const raw = net.connect({ host, port });
  let head = Buffer.alloc(0);
  const stream = new Duplex({
    read: () => {
      raw.resume();
    },
    write: (chunk: Buffer, _encoding, callback) => {
      raw.write(chunk, (error) => {
        callback(error ?? null);
      });
    },
    final: (callback) => {
      raw.end();
      callback();
    },
    destroy: (error, callback) => {
      raw.destroy();
      callback(error);
    },
  });
  raw.on('data', (chunk: Buffer) => {
    if (head.length < HTTP_ANSWER.length) head = Buffer.concat([head, chunk]).subarray(0, HTTP_ANSWER.length);
    if (!stream.push(chunk)) raw.pause();
  });
  raw.on('end', () => stream.push(null));
  raw.on('error', (error) => stream.destroy(error));
  return { stream, firstBytes: () => head.toString('latin1') };
}

/** Connection options of an HTTPS request that remember what the server answered first. */
function httpsConnection(url: URL): { readonly options: Pick<https.RequestOptions, 'createConnection'>; answeredInHttp(): boolean } {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = url.port === '' ? 443 : Number(url.port);
  let peek: ReturnType<typeof peekingConnection> | undefined;
  const createConnection = (): net.Socket => {
    peek = peekingConnection(host, port);
    return tls.connect({ socket: peek.stream, rejectUnauthorized: false, ...(net.isIP(host) === 0 ? { servername: host } : {}) });
  };
  // No agent: a request with its own connection function and no agent uses that function once.
  return { options: { createConnection }, answeredInHttp: () => peek?.firstBytes() === HTTP_ANSWER };
}

export function httpGet(request: HttpGetRequest): Promise<number> {
  const url = new URL(request.url);
  const secure = url.protocol === 'https:';
  const connection = secure ? httpsConnection(url) : undefined;
  return new Promise<number>((resolve, reject) => {
    const options = { headers: { ...request.headers }, timeout: timerMs(request.timeoutMs), rejectUnauthorized: false, ...connection?.options, ...(request.signal === undefined ? {} : { signal: request.signal }) };
    const req = (secure ? https : http).get(request.url, options, (response) => {
      response.on('error', reject);
      response.on('end', () => {
        resolve(response.statusCode ?? 0);
      });
      // The body is not needed; reading it lets the response end.
      response.resume();
    });
    req.on('timeout', () => {
      req.destroy(new HttpHookTimeoutError(`context deadline exceeded (Client.Timeout exceeded while awaiting headers) after ${request.timeoutMs} ms`));
    });
    req.on('error', (error) => {
      reject(connection?.answeredInHttp() === true && !(error instanceof HttpHookTimeoutError) ? new HttpResponseToHttpsClientError({ cause: error }) : error);
    });
  });
}
