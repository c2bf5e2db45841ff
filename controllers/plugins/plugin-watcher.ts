/**
 * The plugin registration watcher (the kubelet's pluginmanager): sockets in
 * `<root>/plugins_registry/` are plugins announcing themselves through the `pluginregistration`
 * API. For each socket: `GetInfo`, a handler for its type validates and registers it, and the
 * plugin hears the outcome through `NotifyRegistrationStatus`; when the socket goes, the handler
 * deregisters it; a socket recreated (a restarted plugin) is registered again.
 *
 * - The directory is read at start (sockets already there are registered again after an agent
 *   restart), on every change `fs.watch` reports, and every second as the kubelet's reconciler
 *   runs, so a missed event costs a second at most.
 * - Types: `DevicePlugin` and `CSIPlugin` have handlers; `DRAPlugin` has none yet and is refused
 *   with the kubelet's words for a type without a handler, logged and reported as a Node event.
 * - A failed registration is tried again with the kubelet's operation backoff (0.5 s doubling to
 *   2 min 2 s), or at once when its socket is recreated.
 * - Files whose name starts with `.` are ignored, as the kubelet does.
 */
import { watch, type FSWatcher } from 'node:fs';
import { lstat, mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Clock, TimerHandle } from '../../util/clock.js';
import { isRecord } from '../../util/is-record.js';
import { unaryCall, unixClient, waitForReady } from './grpc-calls.js';
import { pluginMethod, wireString, wireStrings } from './proto.js';

/** The plugin types the kubelet knows. */
export const PLUGIN_TYPES = ['DevicePlugin', 'CSIPlugin', 'DRAPlugin'] as const;
export type PluginType = (typeof PLUGIN_TYPES)[number];

/** What a plugin says of itself (`GetInfo`). */
export interface PluginInfo {
  readonly type: string;
  readonly name: string;
  /** Where its service listens; empty: the registration socket itself. */
  readonly endpoint: string;
  readonly supportedVersions: readonly string[];
}

/** The handler of one plugin type (the kubelet's `PluginHandler`). */
export interface PluginHandler {
  /** Why the plugin cannot be registered; undefined when it can. */
  validate(info: PluginInfo): string | undefined;
  /** Registers the plugin (`endpoint`: its service's socket). @throws when it cannot be reached */
  register(info: PluginInfo, endpoint: string, signal?: AbortSignal): Promise<void>;
  /** The plugin's socket went. */
  deregister(info: PluginInfo, endpoint: string): void;
}

export interface PluginWatcherOptions {
  /** `<root>/plugins_registry`. */
  readonly dir: string;
  readonly handlers: Partial<Record<PluginType, PluginHandler>>;
  readonly clock: Clock;
  readonly logger: Logger;
  /** A plugin refused or failed (a Warning event on the Node); absent: logged only. */
  readonly onRefused?: (message: string) => void;
}

interface Registered {
  readonly stamp: string;
  readonly info: PluginInfo;
  readonly endpoint: string;
  readonly handler: PluginHandler;
}

interface Failed {
  readonly stamp: string;
  readonly attempts: number;
  readonly retryAt: number;
}

const RESCAN_MS = 1_000;
const CALL_TIMEOUT_MS = 10_000;
const BACKOFF_FIRST_MS = 500;
const BACKOFF_MAX_MS = 122_000;

const method = (name: string): ReturnType<typeof pluginMethod> => pluginMethod('pluginregistration', 'pluginregistration.Registration', name);

function isPluginType(type: string): type is PluginType {
  return (PLUGIN_TYPES as readonly string[]).includes(type);
}

export class PluginWatcher {
  private readonly registered = new Map<string, Registered>();
  private readonly failed = new Map<string, Failed>();
  private watcher: FSWatcher | undefined;
  private timer: TimerHandle | undefined;
  private scanning: Promise<void> | undefined;
  private again = false;
  private readonly abort = new AbortController();

  constructor(private readonly options: PluginWatcherOptions) {}

  /** Creates the directory, registers the sockets already there, then watches. */
  async start(): Promise<void> {
    await mkdir(this.options.dir, { recursive: true, mode: 0o750 });
    this.watcher = watch(this.options.dir, () => { this.scanSoon(); });
    this.watcher.on('error', (error) => { this.options.logger.warn({ err: error }, 'plugin registry watch failed; rescanning every second'); });
    await this.scan();
    this.schedule();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.watcher?.close();
    this.options.clock.clearTimeout(this.timer);
    await this.scanning;
  }

  /** Plugins registered now, by socket path (tests, diagnostics). */
  plugins(): ReadonlyMap<string, PluginInfo> {
    return new Map([...this.registered].map(([socket, r]) => [socket, r.info]));
  }

  /** One pass now (or right after the one running): register new sockets, deregister gone ones. */
  async scan(): Promise<void> {
    if (this.scanning !== undefined) {
      this.again = true;
      return this.scanning;
    }
    this.scanning = this.reconcile().finally(() => { this.scanning = undefined; });
    await this.scanning;
    if (this.again && !this.abort.signal.aborted) {
      this.again = false;
      await this.scan();
    }
  }

  private scanSoon(): void {
    void this.scan();
  }

  private schedule(): void {
    if (this.abort.signal.aborted) return;
    this.timer = this.options.clock.setTimeout(() => {
      void this.scan().finally(() => { this.schedule(); });
    }, RESCAN_MS);
  }

  /** The sockets of the directory, each with a stamp that changes when it is recreated. */
  private async sockets(): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    for (const name of await readdir(this.options.dir).catch(() => [])) {
      if (name.startsWith('.')) continue;
      const file = path.join(this.options.dir, name);
      const info = await lstat(file).catch(() => undefined);
      if (info?.isSocket() === true) found.set(file, `${info.ino}:${info.mtimeMs}`);
    }
    return found;
  }

  private async reconcile(): Promise<void> {
    const sockets = await this.sockets();
    for (const [socket, entry] of this.registered) {
      if (sockets.get(socket) === entry.stamp) continue;
      this.registered.delete(socket);
      this.options.logger.info({ socket, type: entry.info.type, name: entry.info.name }, 'plugin socket gone: deregistering');
      entry.handler.deregister(entry.info, entry.endpoint);
    }
    for (const socket of this.failed.keys()) if (!sockets.has(socket)) this.failed.delete(socket);
    const now = this.options.clock.now();
    for (const [socket, stamp] of sockets) {
      if (this.abort.signal.aborted) return;
      if (this.registered.has(socket)) continue;
      const failed = this.failed.get(socket);
      if (failed?.stamp === stamp && failed.retryAt > now) continue;
      await this.register(socket, stamp, failed?.stamp === stamp ? failed.attempts : 0);
    }
  }

  private async register(socket: string, stamp: string, attempts: number): Promise<void> {
    const client = unixClient(socket);
    const signal = this.abort.signal;
    try {
      await waitForReady(client, CALL_TIMEOUT_MS);
      const info = infoOf(await unaryCall(client, method('GetInfo'), {}, { timeoutMs: CALL_TIMEOUT_MS, signal }));
      const outcome = await this.registerWith(info, socket);
      await unaryCall(client, method('NotifyRegistrationStatus'), { pluginRegistered: outcome.error === undefined, error: outcome.error ?? '' }, { timeoutMs: CALL_TIMEOUT_MS, signal });
      if (outcome.registered !== undefined) {
        this.registered.set(socket, { stamp, ...outcome.registered });
        this.failed.delete(socket);
        this.options.logger.info({ socket, type: info.type, name: info.name }, 'plugin registered');
        return;
      }
      this.refused(socket, stamp, attempts, outcome.error ?? '');
    } catch (error) {
      this.refused(socket, stamp, attempts, `RegisterPlugin error -- failed to get plugin info using RPC GetInfo at socket ${socket}, err: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      client.close();
    }
  }

  /** The handler's verdict, in the kubelet's words when it refuses. */
  private async registerWith(info: PluginInfo, socket: string): Promise<{ registered?: Omit<Registered, 'stamp'>; error?: string }> {
    const handler = isPluginType(info.type) ? this.options.handlers[info.type] : undefined;
    if (handler === undefined) return { error: `RegisterPlugin error -- no handler registered for plugin type: ${info.type} at socket ${socket}` };
    const invalid = handler.validate(info);
    if (invalid !== undefined) return { error: `RegisterPlugin error -- plugin validation failed with err: ${invalid}` };
    const endpoint = info.endpoint === '' ? socket : info.endpoint;
    try {
      await handler.register(info, endpoint, this.abort.signal);
    } catch (error) {
      return { error: `RegisterPlugin error -- plugin registration failed with err: ${error instanceof Error ? error.message : String(error)}` };
    }
    return { registered: { info, endpoint, handler } };
  }

  private refused(socket: string, stamp: string, attempts: number, message: string): void {
    const delay = Math.min(BACKOFF_FIRST_MS * 2 ** attempts, BACKOFF_MAX_MS);
    this.failed.set(socket, { stamp, attempts: attempts + 1, retryAt: this.options.clock.now() + delay });
    this.options.logger.warn({ socket, retryInMs: delay }, message);
    if (attempts === 0) this.options.onRefused?.(message);
  }
}

function infoOf(response: unknown): PluginInfo {
  const r = isRecord(response) ? response : {};
  return { type: wireString(r.type), name: wireString(r.name), endpoint: wireString(r.endpoint), supportedVersions: wireStrings(r.supportedVersions) };
}
