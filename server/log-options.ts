/**
 * The query of `/containerLogs/{namespace}/{pod}/{container}` as the kubelet reads it: the fields
 * of a PodLogOptions (`follow`, `previous`, `timestamps`, `tailLines`, `limitBytes`,
 * `sinceSeconds`, `sinceTime`), checked as the API validates them, then turned into what the log
 * reader needs (the kubelet's NewLogOptions: `sinceSeconds` counts back from now; a `sinceTime`
 * later than that wins).
 */
import { parseTimestamp } from './cri-log.js';
import type { ReadLogsOptions } from './log-reader.js';

/** The options a client asked for. */
export interface PodLogOptions {
  readonly follow: boolean;
  readonly previous: boolean;
  readonly timestamps: boolean;
  readonly tailLines?: number;
  readonly limitBytes?: number;
  readonly sinceSeconds?: number;
  /** Nanoseconds since the epoch. */
  readonly sinceTimeNs?: bigint;
}

/** A query that cannot be decoded (400) or is invalid (422, as the kubelet's validation answers). */
export class LogOptionsError extends Error {
  override readonly name = 'LogOptionsError';

  constructor(
    message: string,
    readonly status: 400 | 422,
  ) {
    super(message);
  }
}

export function isLogOptionsError(err: unknown): err is LogOptionsError {
  return err instanceof LogOptionsError;
}

const TRUE = new Set(['1', 't', 'T', 'true', 'TRUE', 'True']);
const FALSE = new Set(['0', 'f', 'F', 'false', 'FALSE', 'False']);

function bool(query: URLSearchParams, name: string): boolean {
  const raw = query.get(name);
  if (raw === null) return false;
  // `?follow` alone means true, as the API's query decoding takes an empty boolean.
  if (raw === '' || TRUE.has(raw)) return true;
  if (FALSE.has(raw)) return false;
  throw new LogOptionsError(`invalid value for ${name}: "${raw}"`, 400);
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * An int64 field, decoded as Go's strconv.ParseInt(s, 10, 64) (an optional sign, decimal digits, in
 * range): anything else (`1e18`, `0x10`, a value past int64) is a decoding error, 400. Values past
 * 2^53 lose precision as a number; only their size matters (a limit that large is no limit).
 */
function integer(query: URLSearchParams, name: string): number | undefined {
  const raw = query.get(name);
  if (raw === null) return undefined;
  const bad = new LogOptionsError(`invalid value for ${name}: "${raw}"`, 400);
  if (!/^[+-]?\d{1,30}$/.test(raw)) throw bad;
  const value = BigInt(raw);
  if (value < INT64_MIN || value > INT64_MAX) throw bad;
  return Number(value);
}

function sinceTime(query: URLSearchParams): bigint | undefined {
  const raw = query.get('sinceTime');
  if (raw === null) return undefined;
  const parsed = parseTimestamp(raw);
  if (parsed === undefined) throw new LogOptionsError(`invalid value for sinceTime: "${raw}"`, 400);
  return parsed.timeNs;
}

function validate(options: PodLogOptions): PodLogOptions {
  const problems: string[] = [];
  if (options.tailLines !== undefined && options.tailLines < 0) problems.push('tailLines: Invalid value: must be greater than or equal to 0');
  if (options.limitBytes !== undefined && options.limitBytes < 1) problems.push('limitBytes: Invalid value: must be greater than 0');
  if (options.sinceSeconds !== undefined && options.sinceSeconds < 1) problems.push('sinceSeconds: Invalid value: must be greater than 0');
  if (options.sinceSeconds !== undefined && options.sinceTimeNs !== undefined) problems.push('sinceSeconds: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified');
  if (problems.length > 0) throw new LogOptionsError(problems.join(', '), 422);
  return options;
}

/** The options of a container logs query. @throws LogOptionsError */
export function parseLogQuery(query: URLSearchParams): PodLogOptions {
  const tailLines = integer(query, 'tailLines');
  const limitBytes = integer(query, 'limitBytes');
  const sinceSeconds = integer(query, 'sinceSeconds');
  const sinceTimeNs = sinceTime(query);
  return validate({
    follow: bool(query, 'follow'),
    previous: bool(query, 'previous'),
    timestamps: bool(query, 'timestamps'),
    ...(tailLines === undefined ? {} : { tailLines }),
    ...(limitBytes === undefined ? {} : { limitBytes }),
    ...(sinceSeconds === undefined ? {} : { sinceSeconds }),
    ...(sinceTimeNs === undefined ? {} : { sinceTimeNs }),
  });
}

/** What the reader does for `options` at `nowMs`. */
export function readOptions(options: PodLogOptions, nowMs: number): ReadLogsOptions {
  let sinceNs = 0n;
  if (options.sinceSeconds !== undefined) sinceNs = BigInt(nowMs - options.sinceSeconds * 1000) * 1_000_000n;
  if (options.sinceTimeNs !== undefined && options.sinceTimeNs > sinceNs) sinceNs = options.sinceTimeNs;
  return {
    sinceNs,
    timestamps: options.timestamps,
    follow: options.follow,
    ...(options.tailLines === undefined ? {} : { tail: options.tailLines }),
    ...(options.limitBytes === undefined ? {} : { limitBytes: options.limitBytes }),
  };
}
