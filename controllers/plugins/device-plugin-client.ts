/**
 * One registered device plugin as the device manager calls it (the kubelet's v1beta1 `client`):
 * dialled on its socket, its options read once, `ListAndWatch` run until the plugin goes, and the
 * allocation calls with a deadline each.
 */
import type { Client } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { DevicePluginEndpoint, DevicePluginOptions, PluginDevice, ContainerAllocation } from '../../reconcilers/devices/types.js';
import { isRecord } from '../../util/is-record.js';
import { serverStream, unaryCall, unixClient, waitForReady } from './grpc-calls.js';
import { allocationFromWire, devicesFromWire, pluginMethod, wireList, wireStrings } from './proto.js';

const SERVICE = 'v1beta1.DevicePlugin';
/** The kubelet dials a plugin with a 10 s block. */
const DIAL_TIMEOUT_MS = 10_000;
/** A deadline for each allocation call (the kubelet's come from the pod's sync context). */
const CALL_TIMEOUT_MS = 30_000;

const method = (name: string): ReturnType<typeof pluginMethod> => pluginMethod('deviceplugin', SERVICE, name);

export class DevicePluginClient implements DevicePluginEndpoint {
  private readonly client: Client;
  private readonly abort = new AbortController();

  constructor(
    readonly resourceName: string,
    readonly socketPath: string,
    private readonly logger: Logger,
  ) {
    this.client = unixClient(socketPath);
  }

  /** Dials the plugin and reads its options. @throws PluginCallError */
  async connect(signal?: AbortSignal): Promise<DevicePluginOptions> {
    await waitForReady(this.client, DIAL_TIMEOUT_MS);
    const options = await unaryCall(this.client, method('GetDevicePluginOptions'), {}, { timeoutMs: CALL_TIMEOUT_MS, signal });
    const o = isRecord(options) ? options : {};
    return { preStartRequired: o.preStartRequired === true, getPreferredAllocationAvailable: o.getPreferredAllocationAvailable === true };
  }

  /** Runs `ListAndWatch` until the stream ends (the plugin went, or {@link close}); each answer goes to `onDevices`. */
  async listAndWatch(onDevices: (devices: PluginDevice[]) => void): Promise<void> {
    const { error } = await serverStream(this.client, method('ListAndWatch'), {}, { onMessage: (m) => { onDevices(devicesFromWire(m)); }, signal: this.abort.signal });
    this.logger.info({ resourceName: this.resourceName, err: error?.message }, 'ListAndWatch ended for device plugin');
  }

  async preferredAllocation(request: { readonly available: readonly string[]; readonly mustInclude: readonly string[]; readonly size: number }, signal?: AbortSignal): Promise<string[]> {
    const body = { containerRequests: [{ availableDeviceIDs: [...request.available], mustIncludeDeviceIDs: [...request.mustInclude], allocationSize: request.size }] };
    const response = await unaryCall(this.client, method('GetPreferredAllocation'), body, { timeoutMs: CALL_TIMEOUT_MS, signal });
    const first = isRecord(response) ? wireList(response.containerResponses)[0] : undefined;
    return isRecord(first) ? wireStrings(first.deviceIDs) : [];
  }

  async allocate(deviceIds: readonly string[], signal?: AbortSignal): Promise<ContainerAllocation> {
    const response = await unaryCall(this.client, method('Allocate'), { containerRequests: [{ devicesIds: [...deviceIds] }] }, { timeoutMs: CALL_TIMEOUT_MS, signal });
    const responses = isRecord(response) ? wireList(response.containerResponses) : [];
    if (responses.length === 0) throw new Error(`no containers return in allocation response ${JSON.stringify(response)}`);
    return allocationFromWire(responses[0]);
  }

  async preStartContainer(deviceIds: readonly string[], signal?: AbortSignal): Promise<void> {
    await unaryCall(this.client, method('PreStartContainer'), { devicesIds: [...deviceIds] }, { timeoutMs: CALL_TIMEOUT_MS, signal });
  }

  /** Ends the stream and the connection. */
  close(): void {
    this.abort.abort();
    this.client.close();
  }
}
