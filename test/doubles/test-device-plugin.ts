/**
 * A device plugin for tests, over real gRPC on a unix socket: serves `DevicePlugin` (options,
 * ListAndWatch pushing its current devices on every change, GetPreferredAllocation, Allocate,
 * PreStartContainer) and registers with a registration socket, as the sample device plugin does.
 * Every call is recorded. Also a plugin-registration socket (`pluginregistration.Registration`)
 * for the registration watcher's tests. Never shipped.
 */
import { Client, credentials, Metadata, Server, ServerCredentials, type ServerUnaryCall, type ServerWritableStream, type sendUnaryData } from '@grpc/grpc-js';
import { pluginMethod, pluginService } from '../../controllers/plugins/proto.js';
import type { DeviceHealth } from '../../reconcilers/devices/types.js';

export interface TestDevice {
  id: string;
  health: DeviceHealth;
}

export interface TestDevicePluginOptions {
  readonly socketPath: string;
  readonly resourceName: string;
  devices: TestDevice[];
  readonly preStartRequired?: boolean;
  readonly preferred?: (available: string[], size: number) => string[];
}

export interface RecordedCall {
  readonly method: string;
  readonly request: unknown;
}

type Unary = (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => void;

function bind(server: Server, socketPath: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.bindAsync(`unix://${socketPath}`, ServerCredentials.createInsecure(), (error) => {
      if (error === null) resolve();
      else reject(error);
    });
  });
}

export class TestDevicePlugin {
  readonly calls: RecordedCall[] = [];
  private readonly server = new Server();
  private readonly streams = new Set<ServerWritableStream<unknown, unknown>>();

  constructor(readonly options: TestDevicePluginOptions) {
    const record = (method: string, answer: (request: unknown) => unknown): Unary => (call, callback) => {
      this.calls.push({ method, request: call.request });
      callback(null, answer(call.request));
    };
    this.server.addService(pluginService('deviceplugin', 'v1beta1.DevicePlugin'), {
      GetDevicePluginOptions: record('GetDevicePluginOptions', () => ({ preStartRequired: options.preStartRequired === true, getPreferredAllocationAvailable: options.preferred !== undefined })),
      ListAndWatch: (stream: ServerWritableStream<unknown, unknown>) => {
        this.calls.push({ method: 'ListAndWatch', request: stream.request });
        this.streams.add(stream);
        stream.on('cancelled', () => this.streams.delete(stream));
        stream.write(this.listResponse());
      },
      GetPreferredAllocation: record('GetPreferredAllocation', (r) => {
        const request = (r as { containerRequests: { availableDeviceIDs: string[]; allocationSize: number }[] }).containerRequests[0];
        return { containerResponses: [{ deviceIDs: options.preferred?.(request?.availableDeviceIDs ?? [], request?.allocationSize ?? 0) ?? [] }] };
      }),
      Allocate: record('Allocate', (r) => ({
        containerResponses: (r as { containerRequests: { devicesIds: string[] }[] }).containerRequests.map((c) => ({
          envs: { TEST_DEVICES: c.devicesIds.join(',') },
          mounts: c.devicesIds.map((id) => ({ containerPath: `/dev-files/${id}`, hostPath: `/tmp/${id}`, readOnly: true })),
          devices: c.devicesIds.map((id) => ({ containerPath: `/dev/${id}`, hostPath: `/dev/null`, permissions: 'rw' })),
          annotations: { 'example.com/devices': c.devicesIds.join(',') },
          cdiDevices: c.devicesIds.map((id) => ({ name: `${options.resourceName}=${id}` })),
        })),
      })),
      PreStartContainer: record('PreStartContainer', () => ({})),
    });
  }

  async start(): Promise<void> {
    await bind(this.server, this.options.socketPath);
  }

  /** Registers with the registration socket at `registrationSocket`, naming its own socket's file name as the endpoint. */
  async register(registrationSocket: string, endpoint: string, version = 'v1beta1'): Promise<void> {
    const client = new Client(`unix://${registrationSocket}`, credentials.createInsecure());
    const method = pluginMethod('deviceplugin', 'v1beta1.Registration', 'Register');
    try {
      await new Promise<void>((resolve, reject) => {
        client.makeUnaryRequest(method.path, method.requestSerialize, method.responseDeserialize, { version, endpoint, resourceName: this.options.resourceName, options: { preStartRequired: this.options.preStartRequired === true, getPreferredAllocationAvailable: this.options.preferred !== undefined } }, new Metadata(), { deadline: Date.now() + 10_000 }, (error) => {
          if (error === null) resolve();
          else reject(error);
        });
      });
    } finally {
      client.close();
    }
  }

  /** Changes the devices and pushes them on every open ListAndWatch stream. */
  setDevices(devices: TestDevice[]): void {
    this.options.devices = devices;
    for (const stream of this.streams) stream.write(this.listResponse());
  }

  calledWith(method: string): unknown[] {
    return this.calls.filter((c) => c.method === method).map((c) => c.request);
  }

  async stop(): Promise<void> {
    for (const stream of this.streams) stream.end();
    this.streams.clear();
    this.server.forceShutdown();
    await Promise.resolve();
  }

  private listResponse(): unknown {
    return { devices: this.options.devices.map((d) => ({ ID: d.id, health: d.health })) };
  }
}

/** A socket in the plugin registry answering `GetInfo` with `info` and recording `NotifyRegistrationStatus`. */
export class TestRegistrationSocket {
  readonly statuses: { pluginRegistered: boolean; error: string }[] = [];
  private readonly server = new Server();

  constructor(
    readonly socketPath: string,
    info: { type: string; name: string; endpoint: string; supportedVersions: string[] },
  ) {
    this.server.addService(pluginService('pluginregistration', 'pluginregistration.Registration'), {
      GetInfo: ((_call, callback) => { callback(null, info); }) satisfies Unary,
      NotifyRegistrationStatus: ((call, callback) => {
        this.statuses.push(call.request as { pluginRegistered: boolean; error: string });
        callback(null, {});
      }) satisfies Unary,
    });
  }

  async start(): Promise<void> {
    await bind(this.server, this.socketPath);
  }

  stop(): void {
    this.server.forceShutdown();
  }
}
