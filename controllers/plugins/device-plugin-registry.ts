/**
 * The device plugins' side of the node (the kubelet's v1beta1 `server`): the `Registration`
 * service on `<root>/device-plugins/kubelet.sock`, and one {@link DevicePluginClient} per
 * registered resource whose `ListAndWatch` feeds the device manager.
 *
 * - At start the directory's sockets are removed (not the checkpoint) and `kubelet.sock` is made
 *   anew: plugins watch it and register again when it is recreated, which is how they find a
 *   restarted agent.
 * - `Register` checks the API version (`v1beta1`) and the resource name (an extended resource
 *   name), dials `<dir>/<endpoint>`, reads the plugin's options and answers; a failure is the
 *   kubelet's error text. The stream then runs on its own: when it ends, the plugin is
 *   disconnected (its devices unhealthy) unless another plugin registered the resource since.
 * - A plugin registering a resource again replaces the first (whose stream is closed).
 * - Plugins found by the registration watcher (`plugins_registry/`) come through {@link connect}.
 */
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Server, ServerCredentials, status, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { DevicePluginEndpoint, DevicePluginOptions, PluginDevice } from '../../reconcilers/devices/types.js';
import { DEVICE_CHECKPOINT_FILE } from '../../reconcilers/devices/checkpoint.js';
import { isRecord } from '../../util/is-record.js';
import { DevicePluginClient } from './device-plugin-client.js';
import { pluginService, wireString } from './proto.js';
import { isExtendedResourceName } from './resource-names.js';
import type { PluginHandler } from './plugin-watcher.js';

/** The device plugin API versions nodelet speaks (the kubelet's `SupportedVersions`). */
export const DEVICE_PLUGIN_VERSIONS: readonly string[] = ['v1beta1'];
/** The registration socket's name in the device-plugin directory (the kubelet's `KubeletSocket`). */
export const REGISTRATION_SOCKET = 'kubelet.sock';

/** What the registry feeds (the device manager). */
export interface DevicePluginSink {
  pluginConnected(resourceName: string, endpoint: DevicePluginEndpoint, options: DevicePluginOptions): void;
  pluginDisconnected(resourceName: string, endpoint: DevicePluginEndpoint): void;
  devicesChanged(resourceName: string, devices: readonly PluginDevice[]): void;
}

/** A registration refused, with the kubelet's message. */
export class DevicePluginRegistrationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DevicePluginRegistrationError';
  }
}

export function isDevicePluginRegistrationError(error: unknown): error is DevicePluginRegistrationError {
  return error instanceof DevicePluginRegistrationError;
}

/** Why a plugin's version or resource name is refused (the kubelet's words); undefined when fine. */
export function registrationRefusal(versions: readonly string[], resourceName: string): string | undefined {
  if (!versions.some((v) => DEVICE_PLUGIN_VERSIONS.includes(v))) {
    return `requested API version ${JSON.stringify(versions.join(','))} is not supported by kubelet. Supported version is ${JSON.stringify(DEVICE_PLUGIN_VERSIONS)}`;
  }
  if (!isExtendedResourceName(resourceName)) return `the ResourceName ${JSON.stringify(resourceName)} is invalid`;
  return undefined;
}

export interface DevicePluginRegistryOptions {
  /** `<root>/device-plugins`. */
  readonly dir: string;
  readonly sink: DevicePluginSink;
  readonly logger: Logger;
}

export class DevicePluginRegistry {
  private readonly clients = new Map<string, DevicePluginClient>();
  private server: Server | undefined;

  constructor(private readonly options: DevicePluginRegistryOptions) {}

  /** The registration socket's path. */
  get socketPath(): string {
    return path.join(this.options.dir, REGISTRATION_SOCKET);
  }

  /** Cleans the directory's sockets and serves `Registration` on a new `kubelet.sock`. */
  async start(): Promise<void> {
    await mkdir(this.options.dir, { recursive: true, mode: 0o750 });
    await this.removeSockets();
    const server = new Server();
    server.addService(pluginService('deviceplugin', 'v1beta1.Registration'), {
      Register: (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => {
        this.register(call.request).then(
          () => { callback(null, {}); },
          (error: unknown) => { callback({ code: status.UNKNOWN, details: error instanceof Error ? error.message : String(error) }); },
        );
      },
    });
    await new Promise<void>((resolve, reject) => {
      server.bindAsync(`unix://${this.socketPath}`, ServerCredentials.createInsecure(), (error) => {
        if (error === null) resolve();
        else reject(error);
      });
    });
    this.server = server;
    this.options.logger.info({ socket: this.socketPath }, 'device plugin registration server started');
  }

  /** Dials a plugin of `resourceName` at `socketPath`, hands it to the sink and runs its stream. @throws PluginCallError when it cannot be reached */
  async connect(resourceName: string, socketPath: string, signal?: AbortSignal): Promise<void> {
    const client = new DevicePluginClient(resourceName, socketPath, this.options.logger);
    let options: DevicePluginOptions;
    try {
      options = await client.connect(signal);
    } catch (error) {
      client.close();
      throw error;
    }
    const previous = this.clients.get(resourceName);
    this.clients.set(resourceName, client);
    this.options.sink.pluginConnected(resourceName, client, options);
    previous?.close();
    void client.listAndWatch((devices) => { this.options.sink.devicesChanged(resourceName, devices); }).then(() => {
      this.options.sink.pluginDisconnected(resourceName, client);
      if (this.clients.get(resourceName) === client) this.clients.delete(resourceName);
      client.close();
    });
  }

  /** Disconnects the plugin of `resourceName` at `socketPath` (its socket went from the plugin registry). */
  disconnect(resourceName: string, socketPath: string): void {
    const client = this.clients.get(resourceName);
    if (client?.socketPath === socketPath) client.close();
  }

  /** The `DevicePlugin` type's handler for the registration watcher (device plugins announced in `plugins_registry/`). */
  watcherHandler(): PluginHandler {
    return {
      validate: (info) => {
        const refusal = registrationRefusal(info.supportedVersions, info.name);
        return refusal?.startsWith('the ResourceName') === true ? `invalid name of device plugin socket: ${refusal}` : refusal;
      },
      register: (info, endpoint, signal) => this.connect(info.name, endpoint, signal),
      deregister: (info, endpoint) => { this.disconnect(info.name, endpoint); },
    };
  }

  /** Stops serving and closes every plugin's connection. */
  async stop(): Promise<void> {
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
    const server = this.server;
    this.server = undefined;
    if (server === undefined) return;
    await new Promise<void>((resolve) => {
      server.tryShutdown(() => { resolve(); });
    });
  }

  private async register(request: unknown): Promise<void> {
    const r = isRecord(request) ? request : {};
    const resourceName = wireString(r.resourceName);
    const refusal = registrationRefusal([wireString(r.version)], resourceName);
    this.options.logger.info({ resourceName, version: r.version, endpoint: r.endpoint, refusal }, 'Got registration request from device plugin with resource');
    if (refusal !== undefined) throw new DevicePluginRegistrationError(refusal);
    await this.connect(resourceName, path.join(this.options.dir, wireString(r.endpoint)));
  }

  /** Removes every socket of the directory but the checkpoint (the kubelet's CleanupPluginDirectory). */
  private async removeSockets(): Promise<void> {
    for (const name of await readdir(this.options.dir)) {
      if (name.startsWith(DEVICE_CHECKPOINT_FILE)) continue;
      const file = path.join(this.options.dir, name);
      try {
        if ((await stat(file)).isSocket()) await rm(file, { force: true });
      } catch (error) {
        // Gone meanwhile: nothing to clean.
        if (isRecord(error) && error.code === 'ENOENT') continue;
        this.options.logger.warn({ err: error, file }, 'could not clean the device plugin directory');
      }
    }
  }
}
