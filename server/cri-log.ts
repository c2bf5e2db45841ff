/**
 * The CRI container log format and its rendering, as the kubelet's log reader
 * (pkg/kubelet/kuberuntime/logs) handles it. Every line of a CRI log file is
 * `<RFC3339Nano timestamp> <stdout|stderr> <tag> <content>\n`, the tag `F` (full) or `P` (partial:
 * the runtime split a long line; the content continues in the next line, without a newline of its
 * own). Rendering joins partial lines: the content of each is written as it is, a full line's ends
 * with its newline, and `timestamps` prefixes only the first piece of a joined line. Lines older
 * than `since` are skipped; `limitBytes` cuts the output at exactly that many bytes.
 */

/** One parsed line of a CRI log file. */
export interface CriLogLine {
  /** Nanoseconds since the epoch. */
  readonly timeNs: bigint;
  /** The timestamp as the kubelet prints it: nine fraction digits, `Z` for UTC. */
  readonly timestamp: string;
  readonly stream: 'stdout' | 'stderr';
  readonly partial: boolean;
  /** The content; a full line's keeps its trailing newline (if the file had one). */
  readonly content: Buffer;
}

const TIMESTAMP = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

/** An RFC 3339 timestamp (optional fraction up to nanoseconds) as nanoseconds and the kubelet's output form. */
export function parseTimestamp(text: string): { timeNs: bigint; timestamp: string } | undefined {
  const match = TIMESTAMP.exec(text);
  if (match === null) return undefined;
  const [, seconds = '', fraction = '', zoneRaw = 'Z'] = match;
  const ms = Date.parse(`${seconds}${zoneRaw}`);
  if (Number.isNaN(ms)) return undefined;
  const nanos = fraction.padEnd(9, '0');
  const zone = zoneRaw === '+00:00' || zoneRaw === '-00:00' ? 'Z' : zoneRaw;
  return { timeNs: BigInt(ms) * 1_000_000n + BigInt(nanos), timestamp: `${seconds}.${nanos}${zone}` };
}

function nextField(line: Buffer, from: number): { field: string; next: number } | undefined {
  const space = line.indexOf(0x20, from);
  return space < 0 ? undefined : { field: line.toString('latin1', from, space), next: space + 1 };
}

/** One line of a CRI log file (with or without its newline); undefined when it is not one. */
export function parseCriLine(line: Buffer): CriLogLine | undefined {
  const time = nextField(line, 0);
  const parsed = time === undefined ? undefined : parseTimestamp(time.field);
  const stream = time === undefined ? undefined : nextField(line, time.next);
  if (parsed === undefined || stream === undefined || (stream.field !== 'stdout' && stream.field !== 'stderr')) return undefined;
  const tag = nextField(line, stream.next);
  if (tag === undefined) return undefined;
  // Tags are `:`-separated for forward compatibility; the first says partial or full.
  const partial = tag.field.split(':')[0] === 'P';
  let end = line.length;
  if (partial && line[end - 1] === 0x0a) end -= 1;
  return { ...parsed, stream: stream.field, partial, content: line.subarray(tag.next, end) };
}

/** How to render lines. */
export interface RenderOptions {
  /** Lines older than this (nanoseconds since the epoch) are skipped; 0n keeps all. */
  readonly sinceNs: bigint;
  readonly timestamps: boolean;
  /** Bytes to write at most; undefined: no limit. */
  readonly limitBytes?: number;
}

/** Renders lines in order, joining partial ones; stateful across lines of one stream of logs. */
export class LogRenderer {
  private atLineStart = true;
  private remaining: number;

  constructor(private readonly options: RenderOptions) {
    this.remaining = options.limitBytes ?? Number.POSITIVE_INFINITY;
  }

  /** True once `limitBytes` bytes are written: nothing more will be. */
  get exhausted(): boolean {
    return this.remaining <= 0;
  }

  /** The bytes to write for `line` (possibly none). */
  render(line: CriLogLine): Buffer {
    const startsLine = this.atLineStart;
    // A skipped line still ends (or continues) a line: the next piece's prefix depends on it.
    this.atLineStart = line.content.length === 0 || line.content[line.content.length - 1] === 0x0a;
    if (line.timeNs < this.options.sinceNs || this.exhausted) return Buffer.alloc(0);
    let out = line.content;
    if (this.options.timestamps && startsLine) out = Buffer.concat([Buffer.from(`${line.timestamp} `), out]);
    if (out.length > this.remaining) out = out.subarray(0, this.remaining);
    this.remaining -= out.length;
    return out;
  }
}
