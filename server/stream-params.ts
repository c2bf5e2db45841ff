/**
 * The query parameters of `/exec`, `/attach`, `/portForward` and `/run`, read as the kubelet v1.36
 * reads them (`remotecommand.NewOptions`, `portforward.NewV4Options`, `getRun`):
 * - exec/attach: the streams are `input`, `output`, `error` (stdin, stdout, stderr: the API's
 *   `ExecStdinParam`… names, which the API server sends) and `tty`, each counting only as `1`
 *   (the API server sends `1`, kubectl's `true` never reaches the node); `tty` with `error` drops
 *   stderr (a terminal has one output stream), no stream at all is 400 `you must specify at least
 *   1 of stdin, stdout, stderr`. The exec command is every `command` value, in order.
 * - portForward: `port` values (each may be a comma list) matter only for a WebSocket client, the
 *   old channel protocol, which names its ports up front; a SPDY client names them per stream, so
 *   its query is not read. Each must be 1..65535.
 * - run: `cmd` is split on single spaces (the legacy form: no quoting).
 */
import type { StreamOptions } from '../cri/types.js';

/** A parameter the kubelet refuses with 400 and this message. */
export class StreamParamsError extends Error {
  override readonly name = 'StreamParamsError';
  readonly status = 400;
}

export function isStreamParamsError(err: unknown): err is StreamParamsError {
  return err instanceof StreamParamsError;
}

/** The streams of an exec or attach request. @throws StreamParamsError */
export function parseStreamOptions(query: URLSearchParams): StreamOptions {
  const flag = (name: string): boolean => query.get(name) === '1';
  const tty = flag('tty');
  const stdin = flag('input');
  const stdout = flag('output');
  // The kubelet bypasses stderr under a terminal rather than refusing the request.
  const stderr = flag('error') && !tty;
  if (!stdin && !stdout && !stderr) throw new StreamParamsError('you must specify at least 1 of stdin, stdout, stderr');
  return { stdin, stdout, stderr, tty };
}

/** The exec command: every `command` value in order (the kubelet passes an empty one on to the runtime). */
export function parseExecCommand(query: URLSearchParams): string[] {
  return query.getAll('command');
}

function parsePort(value: string, whole: string): number {
  if (!/^\d+$/.test(value) || Number(value) > 65535) throw new StreamParamsError(`unable to parse "${whole}" as a port`);
  const port = Number(value);
  if (port < 1) throw new StreamParamsError(`port "${whole}" must be > 0`);
  return port;
}

/** The ports of a WebSocket port-forward request; none for SPDY. @throws StreamParamsError */
export function parseForwardPorts(query: URLSearchParams, isWebSocket: boolean): number[] {
  if (!isWebSocket) return [];
  const values = query.getAll('port');
  if (values.length === 0) throw new StreamParamsError('query parameter "port" is required');
  const ports: number[] = [];
  for (const value of values) {
    if (value === '') throw new StreamParamsError('query parameter "port" cannot be empty');
    for (const piece of value.split(',')) ports.push(parsePort(piece, value));
  }
  return ports;
}

/** The `/run` command: `cmd` split on single spaces, as the kubelet splits it. */
export function parseRunCommand(query: URLSearchParams): string[] {
  return (query.get('cmd') ?? '').split(' ');
}
