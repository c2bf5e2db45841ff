/**
 * The one flags/env parser of nodelet's commands (the agent and the dashboard). A command declares
 * its flags once; the declaration drives parsing and the usage text, so the two cannot drift.
 *
 * - `--flag value` and `--flag=value`; booleans are present or absent (`--no-auth`), or written
 *   `--flag=true`/`--flag=false` as the kubelet's; `-h`/`--help` is built in and answers `'help'`.
 * - A string flag may fall back to an environment variable, then to a default. A blank variable
 *   (empty or only spaces) counts as unset; a flag given explicitly is taken as is.
 * - Every mistake (unknown flag, missing value, bad value) is a {@link FlagError}, which a command
 *   reports with its usage text.
 */
import { parseArgs } from 'node:util';
import { InvalidGoDurationError, parseGoDurationMs } from './go-duration.js';

/** A flag with a value. */
export interface StringFlag {
  readonly type: 'string';
  /** Placeholder of the value in the usage text, e.g. `PATH`. */
  readonly value: string;
  readonly description: string;
  /** Environment variable read when the flag is absent. */
  readonly env?: string;
  /** Used when neither the flag nor its variable is set; shown in the usage text unless empty. */
  readonly default?: string;
  /** The default as the usage text names it, when the command computes it (e.g. `the host name`). */
  readonly defaultText?: string;
  /**
   * May be given several times; the values are joined with commas, so such a flag's value is a
   * comma-separated list either way (the kubelet's `--manifest-url-header`). Otherwise the last wins.
   */
  readonly repeatable?: true;
}

/** A switch: true when given, false otherwise. */
export interface BooleanFlag {
  readonly type: 'boolean';
  readonly description: string;
}

export type FlagSpec = StringFlag | BooleanFlag;

/** A command's flags by long name (without `--`). */
export type FlagSpecs = Readonly<Record<string, FlagSpec>>;

/** Parsed values: booleans, strings where a default guarantees one, optional strings otherwise. */
export type FlagValues<S extends FlagSpecs> = {
  readonly [K in keyof S]: S[K] extends BooleanFlag ? boolean : S[K] extends { readonly default: string } ? string : string | undefined;
};

/** A bad flag, a bad value or a missing setting; the message names the flag. */
export class FlagError extends Error {
  override readonly name: string = 'FlagError';
}

/** True when `err` is a {@link FlagError} (or a subclass, e.g. a registration flag's). */
export function isFlagError(err: unknown): err is FlagError {
  return err instanceof FlagError;
}

/** The largest int32, the bound of the kubelet's int32 flags (`fs.Int32Var`). */
export const INT32_MAX = 2 ** 31 - 1;

/**
 * A decimal integer in int32's range, as the kubelet's int32 flags take one (digits with an optional
 * leading `-`); undefined for anything else, so each flag refuses it with its own message.
 */
export function parseInt32(raw: string): number | undefined {
  if (!/^-?\d+$/.test(raw)) return undefined;
  const value = Number(raw);
  return value > INT32_MAX || value < -INT32_MAX - 1 ? undefined : value;
}

/** What {@link parseFlags} reads. */
export interface FlagInput {
  /** The command's arguments (after the command name). */
  readonly argv: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  /** Accept (and ignore) arguments that are not flags. Default false: they are errors. */
  readonly allowPositionals?: boolean;
}

type ParseArgsOptions = Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }>;

function parseArgsOptions(specs: FlagSpecs): ParseArgsOptions {
  const options: ParseArgsOptions = { help: { type: 'boolean', short: 'h' } };
  for (const [name, spec] of Object.entries(specs)) options[name] = spec.type === 'string' && spec.repeatable === true ? { type: spec.type, multiple: true } : { type: spec.type };
  return options;
}

/**
 * A switch written the kubelet's way, `--flag=true` or `--flag=false` (pflag's booleans), as the
 * bare `--flag` or nothing. Another value is left for the parser to refuse.
 */
function normalizeBooleans(specs: FlagSpecs, argv: readonly string[]): string[] {
  return argv.flatMap((arg) => {
    const match = /^--([^=]+)=(true|false)$/.exec(arg);
    if (match === null || specs[match[1] ?? '']?.type !== 'boolean') return [arg];
    return match[2] === 'true' ? [`--${match[1] ?? ''}`] : [];
  });
}

/**
 * A string flag followed by a negative number (`--maximum-dead-containers -1`) as `--flag=-1`:
 * pflag takes the next argument as the value whatever it starts with, node:util's parser refuses
 * one that looks like a flag.
 */
function joinNegativeValues(specs: FlagSpecs, argv: readonly string[]): string[] {
  const joined: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    const next = argv[i + 1];
    const name = /^--([^=]+)$/.exec(arg)?.[1] ?? '';
    if (specs[name]?.type === 'string' && next !== undefined && /^-\d+$/.test(next)) {
      joined.push(`${arg}=${next}`);
      i++;
    } else joined.push(arg);
  }
  return joined;
}

/** node:util's parser, its errors (`ERR_PARSE_ARGS_*` codes) turned into {@link FlagError}s. */
function rawValues(specs: FlagSpecs, input: FlagInput): Record<string, string | boolean | undefined> {
  try {
    const parsed = parseArgs({ args: normalizeBooleans(specs, joinNegativeValues(specs, input.argv)), options: parseArgsOptions(specs), allowPositionals: input.allowPositionals ?? false, strict: true });
    const values: Record<string, string | boolean | undefined> = {};
    for (const [name, value] of Object.entries(parsed.values)) values[name] = Array.isArray(value) ? value.join(',') : value;
    return values;
  } catch (error) {
    if (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')) throw new FlagError(error.message);
    throw error;
  }
}

function nonBlank(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

function valueOf(spec: FlagSpec, raw: string | boolean | undefined, env: NodeJS.ProcessEnv): string | boolean | undefined {
  if (spec.type === 'boolean') return raw === true;
  if (typeof raw === 'string') return raw;
  return nonBlank(spec.env === undefined ? undefined : env[spec.env]) ?? spec.default;
}

/** Parses flags, then environment, then defaults; `'help'` when help was asked for. */
export function parseFlags<S extends FlagSpecs>(specs: S, input: FlagInput): FlagValues<S> | 'help' {
  const raw = rawValues(specs, input);
  if (raw.help === true) return 'help';
  const values: Record<string, string | boolean | undefined> = {};
  for (const [name, spec] of Object.entries(specs)) values[name] = valueOf(spec, raw[name], input.env);
  return values as FlagValues<S>;
}

/** What a usage text says besides the flags. */
export interface UsageText {
  /** E.g. `nodelet dashboard [flags]`. */
  readonly synopsis: string;
  /** What the command does, in a sentence or two. */
  readonly summary: string;
  /** Printed after the flags. */
  readonly notes?: string;
}

const COLUMN = 27;

function usageLine(left: string, text: string): string {
  return left.length < COLUMN - 1 ? `${left.padEnd(COLUMN)}${text}` : `${left}\n${' '.repeat(COLUMN)}${text}`;
}

function describeFlag(spec: FlagSpec): string {
  if (spec.type === 'boolean') return spec.description;
  const env = spec.env === undefined ? '' : ` [${spec.env}]`;
  const shown = spec.defaultText ?? spec.default;
  const fallback = shown === undefined || shown === '' ? '' : `; default ${shown}`;
  return `${spec.description}${env}${fallback}`;
}

/** The usage text, one line per flag (environment variable in brackets, then the default). */
export function formatUsage(specs: FlagSpecs, text: UsageText): string {
  const lines = Object.entries(specs).map(([name, spec]) => usageLine(`  --${name}${spec.type === 'string' ? ` ${spec.value}` : ''}`, describeFlag(spec)));
  lines.push(usageLine('  -h, --help', 'this text'));
  const notes = text.notes === undefined ? '' : `\n${text.notes}`;
  return `Usage: ${text.synopsis}\n\n${text.summary}\n\nFlags (environment variable in brackets):\n${lines.join('\n')}\n${notes}`;
}

/** `raw` as a positive integer. @throws FlagError naming `--flag` otherwise. */
export function positiveInteger(flag: string, raw: string): number {
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new FlagError(`--${flag} must be a positive integer, got "${raw}"`);
  return Number(raw);
}

/**
 * Seconds from whole seconds (`120`, nodelet's form) or a Go duration (`2m`, `1m30s`, the kubelet's
 * form for the same flag), rounded to the second, from 0 to `maxSeconds`.
 * @throws FlagError naming `--flag` otherwise.
 */
export function secondsOrDuration(flag: string, raw: string, maxSeconds: number): number {
  const bad = (): FlagError => new FlagError(`--${flag} must be seconds or a duration such as 2m or 1m30s, from 0 to ${maxSeconds} s, got "${raw}"`);
  let seconds: number;
  if (/^\d+$/.test(raw)) seconds = Number(raw);
  else {
    try {
      seconds = Math.round(parseGoDurationMs(raw) / 1000);
    } catch (error) {
      if (error instanceof InvalidGoDurationError) throw bad();
      throw error;
    }
  }
  if (!(seconds >= 0 && seconds <= maxSeconds)) throw bad();
  return seconds;
}

/** `raw` when it is one of `allowed`. @throws FlagError naming `--flag` otherwise. */
export function oneOf<T extends string>(flag: string, raw: string, allowed: readonly T[]): T {
  const found = allowed.find((candidate) => candidate === raw);
  if (found === undefined) throw new FlagError(`--${flag} must be one of ${allowed.join('|')}, got "${raw}"`);
  return found;
}

/** The log levels pino accepts, as both commands' `--log-level` offers them. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/**
 * A command's settings from `parse`, or the exit code to end with instead: 0 after `--help` (the
 * usage printed on stdout), 2 after a {@link FlagError} (its message and the usage on stderr).
 * Any other error is not bad input and propagates.
 */
export function settingsOrExitCode<T>(parse: () => T | 'help', usage: string): { readonly settings: T } | { readonly exitCode: number } {
  let settings: T | 'help';
  try {
    settings = parse();
  } catch (error) {
    if (!isFlagError(error)) throw error;
    process.stderr.write(`${error.message}\n\n${usage}`);
    return { exitCode: 2 };
  }
  if (settings === 'help') {
    process.stdout.write(usage);
    return { exitCode: 0 };
  }
  return { settings };
}
