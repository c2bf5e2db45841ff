/**
 * The registration watcher's handler for `CSIPlugin` (the kubelet's csi `RegistrationHandler`):
 *
 * - validate: the driver must offer a 1.x CSI version, higher than a driver of the same name
 *   already registered (a restarted driver's socket is deregistered first, so it registers again);
 * - register: the driver joins the {@link CsiDriverStore} the volume plugin reads, `NodeGetInfo`
 *   gives its node ID, topology and volume limit, written to the Node and the CSINode; a failure
 *   takes it out again and fails the registration (retried by the watcher);
 * - deregister (its socket went): out of the store, out of the CSINode and the node ID annotation.
 *
 * Writes to the API for one driver are serialized, so a deregistration's removal never lands after
 * the next registration's install.
 */
import type { Logger } from 'pino';
import type { CsiDriverStore } from '../../reconcilers/volumes/csi/types.js';
import { CsiDriverClient } from './csi-client.js';
import type { CsiNodeInfoApi } from './csi-node-info.js';
import type { PluginHandler, PluginInfo } from './plugin-watcher.js';

const log = (message: string): string => `kubernetes.io/csi: ${message}`;

/** A version as Go's `ParseGeneric` reads it (at least major.minor), compared component-wise. */
function parseGeneric(text: string): number[] | undefined {
  const match = /^\s*v?([0-9]+(?:\.[0-9]+)+)/.exec(text);
  return match?.[1]?.split('.').map(Number);
}

function compareVersions(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** The highest 1.x version offered (`HighestSupportedVersion`), or the kubelet's reason there is none. */
export function highestSupportedVersion(versions: readonly string[]): { version: number[] } | { error: string } {
  if (versions.length === 0) return { error: 'empty array for supported versions' };
  let best: number[] | undefined;
  for (const text of versions) {
    const version = parseGeneric(text);
    if (version === undefined || (version[0] ?? 0) > 1) continue;
    if (best === undefined || compareVersions(best, version) < 0) best = version;
  }
  if (best === undefined) return { error: `could not find a highest supported version from versions (${JSON.stringify(versions)}) reported` };
  if (best[0] !== 1) return { error: `highest supported version reported is ${best.join('.')}, must be v1.x` };
  return { version: best };
}

export interface CsiPluginHandlerOptions {
  readonly store: CsiDriverStore;
  readonly nodeInfo: CsiNodeInfoApi;
  readonly logger: Logger;
  /** Deadline of one driver call; default the kubelet's 2 min. */
  readonly callTimeoutMs?: number;
}

export class CsiPluginHandler implements PluginHandler {
  private readonly clients = new Map<string, CsiDriverClient>();
  private readonly writes = new Map<string, Promise<void>>();

  constructor(private readonly options: CsiPluginHandlerOptions) {}

  validate(info: PluginInfo): string | undefined {
    const refusal = this.versionRefusal('ValidatePlugin', info);
    return refusal === undefined ? undefined : `validation failed for CSI Driver ${info.name} at endpoint ${info.endpoint}: ${refusal}`;
  }

  async register(info: PluginInfo, endpoint: string, signal?: AbortSignal): Promise<void> {
    const refusal = this.versionRefusal('RegisterPlugin', info);
    const highest = highestSupportedVersion(info.supportedVersions);
    if (refusal !== undefined || 'error' in highest) throw new Error(refusal ?? 'no supported version');
    const client = new CsiDriverClient(endpoint, this.options.callTimeoutMs);
    this.replaceClient(info.name, client);
    this.options.store.set(info.name, { client, version: highest.version.join('.') });
    try {
      const nodeInfo = await client.nodeGetInfo(signal);
      if (nodeInfo.nodeId === '') throw new Error('error adding CSI driver node info: driverNodeID must not be empty');
      await this.serialize(info.name, () => this.options.nodeInfo.installDriver(info.name, nodeInfo, signal));
      this.options.logger.info({ driver: info.name, endpoint, nodeId: nodeInfo.nodeId, topology: nodeInfo.topology }, 'CSI driver registered');
    } catch (error) {
      this.forget(info.name, client);
      throw error;
    }
  }

  deregister(info: PluginInfo): void {
    const client = this.clients.get(info.name);
    if (client !== undefined) this.forget(info.name, client);
    this.options.logger.info({ driver: info.name }, log(`registrationHandler.DeRegisterPlugin request for plugin ${info.name}`));
    void this.serialize(info.name, () => this.options.nodeInfo.uninstallDriver(info.name)).catch((error: unknown) => {
      this.options.logger.warn({ err: error, driver: info.name }, log('registrationHandler.DeRegisterPlugin failed'));
    });
  }

  /** Closes every driver's channel (agent stop). */
  close(): void {
    for (const [name, client] of this.clients) this.forget(name, client);
  }

  private versionRefusal(caller: string, info: PluginInfo): string | undefined {
    const highest = highestSupportedVersion(info.supportedVersions);
    if (info.supportedVersions.length === 0) return log(`${caller} for CSI driver "${info.name}" failed. Plugin returned an empty list for supported versions`);
    if ('error' in highest) return log(`${caller} for CSI driver "${info.name}" failed. None of the versions specified ${JSON.stringify(info.supportedVersions)} are supported. err=${highest.error}`);
    const existing = this.options.store.version(info.name);
    const existingVersion = existing === undefined ? undefined : parseGeneric(existing);
    if (existingVersion !== undefined && compareVersions(existingVersion, highest.version) >= 0) {
      return log(`${caller} for CSI driver "${info.name}" failed. Another driver with the same name is already registered with a higher supported version: "${existing ?? ''}"`);
    }
    return undefined;
  }

  private replaceClient(name: string, client: CsiDriverClient): void {
    this.clients.get(name)?.close();
    this.clients.set(name, client);
  }

  private forget(name: string, client: CsiDriverClient): void {
    if (this.clients.get(name) === client) {
      this.clients.delete(name);
      this.options.store.delete(name);
    }
    client.close();
  }

  private async serialize(name: string, write: () => Promise<void>): Promise<void> {
    const previous = this.writes.get(name) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(write);
    this.writes.set(name, next);
    try {
      await next;
    } finally {
      if (this.writes.get(name) === next) this.writes.delete(name);
    }
  }
}
