/**
 * Streams one container's CRI log file to a sink, as the kubelet's ReadLogs: from the start or the
 * last `tail` lines, rendered (partial lines joined, `since`, `timestamps`, `limitBytes`), in
 * blocks (never the whole file in memory), honouring the sink's backpressure. Without `follow` it
 * stops at the end of the file (with `tail`, after that many lines, even if more were appended).
 * With `follow` it waits at the end for more: it notices the runtime's log rotation (the path now
 * names a new file: the rest of the old one is read, then the new one from its start), and once the
 * container no longer runs it reads what is left and ends. It ends at once when `signal` aborts
 * (the client went away). Only the file the runtime writes is read: like the kubelet, rotated files
 * (`<n>.log.<timestamp>`, `.gz`) are not part of a container's logs.
 */
import { open, stat, type FileHandle } from 'node:fs/promises';
import { LogRenderer, parseCriLine, type RenderOptions } from './cri-log.js';
import { tailStart } from './log-tail.js';

/** What to read; see this file's header. */
export interface ReadLogsOptions extends RenderOptions {
  /** Lines from the end to start at; undefined: the whole file. */
  readonly tail?: number;
  readonly follow: boolean;
}

/** Where the reader writes and how it waits. */
export interface LogReadContext {
  /** Writes bytes; resolves when the sink can take more. */
  readonly write: (chunk: Buffer) => Promise<void>;
  /** For `follow`: whether the container still runs (the kubelet asks the runtime). */
  readonly isRunning: () => Promise<boolean>;
  /** For `follow`: waits before looking at the file again; resolves early when `signal` aborts. */
  readonly wait: (signal: AbortSignal) => Promise<void>;
  readonly signal: AbortSignal;
}

const CHUNK = 64 * 1024;
/** A line longer than this is handed on in pieces (runtimes split at 16 KiB; this only bounds memory). */
const MAX_LINE = 1024 * 1024;

/** Reads a file sequentially from an offset, yielding its lines (an unterminated rest stays pending). */
class LineSource {
  private pending = Buffer.alloc(0);
  private readonly buffer = Buffer.alloc(CHUNK);

  constructor(
    public handle: FileHandle,
    private position: number,
  ) {}

  /** The complete lines read by one more read; empty at the end of the file. */
  async next(): Promise<{ lines: Buffer[]; eof: boolean }> {
    const { bytesRead } = await this.handle.read(this.buffer, 0, CHUNK, this.position);
    if (bytesRead === 0) return { lines: [], eof: true };
    this.position += bytesRead;
    let data = Buffer.concat([this.pending, this.buffer.subarray(0, bytesRead)]);
    const lines: Buffer[] = [];
    for (let nl = data.indexOf(0x0a); nl >= 0; nl = data.indexOf(0x0a)) {
      lines.push(data.subarray(0, nl + 1));
      data = data.subarray(nl + 1);
    }
    if (data.length > MAX_LINE) {
      lines.push(data);
      data = Buffer.alloc(0);
    }
    this.pending = Buffer.from(data);
    return { lines, eof: false };
  }

  /** The unterminated rest, taken (the last line of a file that will grow no more). */
  takePending(): Buffer {
    const rest = this.pending;
    this.pending = Buffer.alloc(0);
    return rest;
  }

  /** Switches to a new file (after rotation), from its start; the old one's rest was read. */
  async reopen(handle: FileHandle): Promise<void> {
    await this.handle.close();
    this.handle = handle;
    this.position = 0;
  }
}

/** Renders lines and writes them; counts lines for `tail` without `follow`. */
class Emitter {
  private readonly renderer: LogRenderer;
  private linesLeft: number;

  constructor(
    options: ReadLogsOptions,
    private readonly context: LogReadContext,
  ) {
    this.renderer = new LogRenderer(options);
    // With tail and without follow, stop after the tail's lines: lines appended meanwhile are not the tail.
    this.linesLeft = options.tail !== undefined && !options.follow ? options.tail : Number.POSITIVE_INFINITY;
  }

  get done(): boolean {
    return this.linesLeft <= 0 || this.renderer.exhausted || this.context.signal.aborted;
  }

  /** Renders `lines` and writes them in one piece (one write per read block, not per line). */
  async emit(lines: readonly Buffer[]): Promise<void> {
    const out: Buffer[] = [];
    for (const raw of lines) {
      if (this.done) break;
      const line = parseCriLine(raw);
      // A line that is not CRI's (a torn write) is skipped, as the kubelet does.
      if (line === undefined) continue;
      out.push(this.renderer.render(line));
      this.linesLeft -= 1;
    }
    const chunk = Buffer.concat(out);
    if (chunk.length > 0 && !this.context.signal.aborted) await this.context.write(chunk);
  }
}

async function sameFile(path: string, handle: FileHandle): Promise<boolean> {
  try {
    const [now, open] = await Promise.all([stat(path), handle.stat()]);
    return now.ino === open.ino && now.dev === open.dev;
  } catch {
    // Gone for the moment (rotation in progress): keep the open file.
    return true;
  }
}

/** Streams the log at `path`; see this file's header. Throws when the file cannot be opened. */
export async function readLogs(path: string, options: ReadLogsOptions, context: LogReadContext): Promise<void> {
  const handle = await open(path, 'r');
  const start = options.tail === undefined ? 0 : await tailStart(async (position, length) => {
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await handle.read(buffer, 0, length, position);
    return buffer.subarray(0, bytesRead);
  }, (await handle.stat()).size, options.tail);
  const source = new LineSource(handle, start);
  const emitter = new Emitter(options, context);
  try {
    await pump(path, source, emitter, { options, context });
  } finally {
    await source.handle.close();
  }
}

async function pump(path: string, source: LineSource, emitter: Emitter, run: { options: ReadLogsOptions; context: LogReadContext }): Promise<void> {
  let running = true;
  while (!emitter.done) {
    const { lines, eof } = await source.next();
    await emitter.emit(lines);
    if (!eof) continue;
    if (!run.options.follow || !running) {
      // The file will grow no more: its unterminated last line counts too.
      const rest = source.takePending();
      if (rest.length > 0) await emitter.emit([rest]);
      return;
    }
    if (!(await sameFile(path, source.handle))) {
      const rest = source.takePending();
      if (rest.length > 0) await emitter.emit([rest]);
      await source.reopen(await open(path, 'r'));
      continue;
    }
    // Not running any more: one more pass reads what it wrote last, then the reader ends.
    running = await run.context.isRunning();
    if (running) await run.context.wait(run.context.signal);
  }
}
