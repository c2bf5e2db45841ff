/**
 * The node log query's decisions (`/logs/?query=…`, the kubelet's NodeLogQuery), pure: what a
 * request's parameters ask for, and every refusal with the kubelet v1.37's text, as apimachinery
 * prints field errors (`query: Invalid value: …: detail`; several as `[a, b]`, repeats once).
 *
 * - `query` (repeatable): a value holding `/` or `\` names a file under the log directory, any
 *   other non-blank value a service; all blank is 400 `may not be empty`.
 * - `sinceTime`, `untilTime` (RFC 3339), `tailLines`, `boot` (integers), `pattern` (Go regexp):
 *   the first value of each counts; unparsable ones are 400.
 * - No parameter of these at all: no query, the file server answers.
 * - Then {@link validateNodeLogQuery} (406): services of at most 256 safe characters, at most 4;
 *   not a file and a service, not two files, not a file with options, a file that exists;
 *   untilTime not before sinceTime; boot below 1; tailLines 0..100000; pattern valid Go syntax.
 *
 * No option ever filters a file: the kubelet refuses options with a file query, and answers a
 * service that resolves to a file with options by a note instead of the log (see
 * node-log-query-server.ts). sinceTime, untilTime, tailLines, pattern and boot act only on the
 * journal, which nodelet's nodes do not have.
 */
import { goAtoi, goJsonStrings, goQuote, parseGoRfc3339, type GoTime } from './go-format.js';
import { goRegexpSyntaxError } from './go-regexp-syntax.js';

/** The kubelet's limits. */
export const MAX_TAIL_LINES = 100_000n;
export const MAX_SERVICE_LENGTH = 256;
export const MAX_SERVICES = 4;

/** The query's options; a field is present only when the request gave it a non-empty value. */
export interface NodeLogQueryOptions {
  readonly sinceTime?: GoTime;
  readonly untilTime?: GoTime;
  readonly tailLines?: bigint;
  readonly boot?: bigint;
  readonly pattern?: string;
}

/** What a `/logs/` request with query parameters asks for. */
export interface NodeLogQuery {
  /** Names without `/` or `\`: services, which nodelet looks for as files (no journal). */
  readonly services: readonly string[];
  /** Paths under the log directory, as given. */
  readonly files: readonly string[];
  readonly options: NodeLogQueryOptions;
}

/** The outcome of reading a request's parameters. */
export type ParsedNodeLogQuery =
  /** No query parameter: the file server answers, as when the feature is off. */
  | { readonly kind: 'none' }
  /** 400 with `message`. */
  | { readonly kind: 'invalid'; readonly message: string }
  | { readonly kind: 'query'; readonly query: NodeLogQuery };

/** apimachinery's field errors as `Error()` prints them. */
const invalid = (field: string, shown: string, detail: string): string => `${field}: Invalid value: ${shown}: ${detail}`;

/** `ErrorList.ToAggregate().Error()`: repeats dropped, one message bare, several bracketed. */
export function aggregateErrors(messages: readonly string[]): string {
  const unique = [...new Set(messages)];
  return unique.length === 1 ? (unique[0] ?? '') : `[${unique.join(', ')}]`;
}

/** True when any option is set (the kubelet compares the options struct with its zero value). */
export function hasOptions(options: NodeLogQueryOptions): boolean {
  return Object.values(options).some((v) => v !== undefined);
}

function splitQueries(queries: readonly string[]): { files: string[]; services: string[] } {
  const files: string[] = [];
  const services: string[] = [];
  for (const q of queries) {
    // A slash or backslash hints at a file; blank values are dropped.
    if (/[/\\]/u.test(q)) files.push(q);
    else if (q.trim() !== '') services.push(q);
  }
  return { files, services };
}

/** The first non-empty value of `name`, read by `read`; an error message goes to `errors`. */
function option<T>(values: ReadonlyMap<string, readonly string[]>, name: string, errors: string[], read: (raw: string) => T | { error: string }): T | undefined {
  const raw = values.get(name)?.[0] ?? '';
  if (raw === '') return undefined;
  const got = read(raw);
  if (typeof got === 'object' && got !== null && 'error' in got) {
    errors.push(invalid(name, goQuote(raw), got.error));
    return undefined;
  }
  return got;
}

const time = (raw: string): GoTime | { error: string } => parseGoRfc3339(raw) ?? { error: 'invalid time format' };
const integer = (raw: string): bigint | { error: string } => {
  const got = goAtoi(raw);
  return 'error' in got ? got : got.value;
};

/** Reads a request's query parameters (Go's `url.Values`); see this file's header. */
export function parseNodeLogQuery(values: ReadonlyMap<string, readonly string[]>): ParsedNodeLogQuery {
  const errors: string[] = [];
  const queries = values.get('query');
  const { files, services } = splitQueries(queries ?? []);
  if (queries !== undefined && files.length === 0 && services.length === 0) errors.push(invalid('query', goJsonStrings(queries), 'may not be empty'));
  const sinceTime = option(values, 'sinceTime', errors, time);
  const untilTime = option(values, 'untilTime', errors, time);
  const boot = option(values, 'boot', errors, integer);
  const tailLines = option(values, 'tailLines', errors, integer);
  const pattern = option(values, 'pattern', errors, (raw) => raw);
  if (errors.length > 0) return { kind: 'invalid', message: aggregateErrors(errors) };
  const options: NodeLogQueryOptions = {
    ...(sinceTime === undefined ? {} : { sinceTime }),
    ...(untilTime === undefined ? {} : { untilTime }),
    ...(tailLines === undefined ? {} : { tailLines }),
    ...(boot === undefined ? {} : { boot }),
    ...(pattern === undefined ? {} : { pattern }),
  };
  if (files.length === 0 && services.length === 0 && !hasOptions(options)) return { kind: 'none' };
  return { kind: 'query', query: { services, files, options } };
}

/** The file whose existence validation checks: the only one, asked for without options. */
export function fileToCheck(query: NodeLogQuery): string | undefined {
  const [file] = query.files;
  return query.services.length === 0 && query.files.length === 1 && !hasOptions(query.options) ? file : undefined;
}

function serviceErrors(services: readonly string[]): string[] {
  const errors = services.flatMap((s) => {
    // Length is counted in bytes, as Go's len.
    if (Buffer.byteLength(s) > MAX_SERVICE_LENGTH) return [invalid('query', goQuote(s), `length must be less than ${String(MAX_SERVICE_LENGTH)}`)];
    return /[^a-zA-Z\-_.:0-9@]/u.test(s) ? [invalid('query', goQuote(s), 'input contains unsupported characters')] : [];
  });
  if (services.length > MAX_SERVICES) errors.push(`query: Too many: ${String(services.length)}: must have at most ${String(MAX_SERVICES)} items`);
  return errors;
}

/** Go's `fmt.Sprintf("%v", []string{…})`. */
const goList = (values: readonly string[]): string => `[${values.join(' ')}]`;

function targetError(query: NodeLogQuery, fileError: string | undefined): string | undefined {
  const { files, services } = query;
  if (files.length === 0 && services.length === 0) return 'query: Required value: cannot be empty with options';
  if (files.length > 0 && services.length > 0) return invalid('query', goQuote(`${goList(files)}, ${goList(services)}`), 'cannot specify a file and service');
  if (files.length > 1) return invalid('query', goJsonStrings(files), 'cannot specify more than one file');
  if (files.length === 1 && hasOptions(query.options)) return invalid('query', goJsonStrings(files), 'cannot specify file with options');
  return files.length === 1 && fileError !== undefined ? invalid('query', goJsonStrings(files), fileError) : undefined;
}

/**
 * The 406 messages of a parsed query, in the kubelet's order; empty when it is served.
 * @param fileError why {@link fileToCheck}'s file cannot be looked up under the log directory
 *   (`statat NAME: no such file or directory`, `… path escapes from parent`), when it cannot.
 */
export function validateNodeLogQuery(query: NodeLogQuery, fileError: string | undefined): string[] {
  const { sinceTime, untilTime, boot, tailLines, pattern } = query.options;
  const errors = serviceErrors(query.services);
  const target = targetError(query, fileError);
  if (target !== undefined) errors.push(target);
  if (sinceTime !== undefined && untilTime !== undefined && sinceTime.epochNs > untilTime.epochNs) errors.push(invalid('untilTime', untilTime.shown, 'must be after `sinceTime`'));
  if (boot !== undefined && boot > 0n) errors.push(invalid('boot', String(boot), 'must be less than 1'));
  if (tailLines !== undefined && (tailLines < 0n || tailLines > MAX_TAIL_LINES)) errors.push(invalid('tailLines', String(tailLines), `must be between 0 and ${String(MAX_TAIL_LINES)}, inclusive`));
  const patternError = pattern === undefined ? undefined : goRegexpSyntaxError(pattern);
  if (patternError !== undefined && pattern !== undefined) errors.push(invalid('pattern', goQuote(pattern), patternError));
  return errors;
}

/** The candidates for a service's log under the log directory, in the kubelet's order of trial. */
export function serviceLogCandidates(service: string): string[] {
  return [service, `${service}.log`, `${service}/${service}.log`];
}

/** The note written instead of logs when options meet services found only as files. */
export function optionsWithFilesNote(services: readonly string[]): string {
  return `\noptions present and query resolved to log files for ${goList(services)}\ntry without specifying options\n`;
}
