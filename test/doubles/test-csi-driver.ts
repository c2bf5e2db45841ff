/**
 * A CSI driver for tests (test code, not shipped): Identity and Node services on a unix socket,
 * recording every call. With `mount: true` (root) it does what a real node plugin does with a
 * directory volume: NodeStageVolume bind-mounts the volume's backing directory (one per volume ID
 * under `dataDir`) at the staging path, NodePublishVolume bind-mounts the staging path (or the
 * backing directory when it does not stage) at the target path, read-only when asked; unpublish
 * and unstage unmount and remove the directory, idempotently. Without `mount` it only records.
 * Errors can be injected per method (a gRPC status code and message).
 */
import { execFile } from 'node:child_process';
import { promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Server, ServerCredentials, status as GrpcStatus, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import { pluginService } from '../../controllers/plugins/proto.js';

const run = promisify(execFile);

export interface TestCsiDriverOptions {
  readonly name: string;
  /** The driver's socket. */
  readonly socketPath: string;
  /** Where backing directories live (one per volume ID). */
  readonly dataDir: string;
  readonly nodeId?: string;
  readonly topology?: Readonly<Record<string, string>>;
  readonly maxVolumesPerNode?: number;
  /** Node RPC capabilities, e.g. `STAGE_UNSTAGE_VOLUME`, `VOLUME_MOUNT_GROUP`. */
  readonly capabilities?: readonly string[];
  /** Real bind mounts (needs root). */
  readonly mount?: boolean;
}

export interface RecordedCsiCall {
  readonly method: string;
  readonly request: Record<string, unknown>;
}

type Unary = (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => void;

function isMountPoint(dir: string): boolean {
  const target = path.resolve(dir);
  return readFileSync('/proc/self/mountinfo', 'utf8').split('\n').some((line) => line.split(' ')[4] === target);
}

async function unmountAndRemove(dir: string): Promise<void> {
  while (isMountPoint(dir)) await run('umount', [dir]);
  await fs.rm(dir, { recursive: true, force: true });
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

export class TestCsiDriver {
  readonly calls: RecordedCsiCall[] = [];
  /** Method → the error its next calls answer with (until deleted). */
  readonly failures = new Map<string, { code: GrpcStatus; message: string }>();
  private readonly server = new Server();

  constructor(private readonly options: TestCsiDriverOptions) {
    const handlers = {
      GetPluginInfo: () => ({ name: options.name, vendorVersion: 'test' }),
      GetPluginCapabilities: () => ({ capabilities: [] }),
      Probe: () => ({ ready: { value: true } }),
      NodeGetInfo: () => ({ nodeId: options.nodeId ?? 'test-node', maxVolumesPerNode: String(options.maxVolumesPerNode ?? 0), accessibleTopology: { segments: { ...(options.topology ?? {}) } } }),
      NodeGetCapabilities: () => ({ capabilities: (options.capabilities ?? []).map((type) => ({ rpc: { type } })) }),
      NodeStageVolume: (r: Record<string, unknown>) => this.stage(r),
      NodeUnstageVolume: (r: Record<string, unknown>) => this.unmount(str(r.stagingTargetPath)),
      NodePublishVolume: (r: Record<string, unknown>) => this.publish(r),
      NodeUnpublishVolume: (r: Record<string, unknown>) => this.unmount(str(r.targetPath)),
    };
    const wrap = (method: string, handler: (request: Record<string, unknown>) => object | Promise<object>): Unary => (call, callback) => {
      const request = call.request as Record<string, unknown>;
      this.calls.push({ method, request });
      const failure = this.failures.get(method);
      if (failure !== undefined) {
        callback({ code: failure.code, details: failure.message });
        return;
      }
      Promise.resolve()
        .then(() => handler(request))
        .then((response) => { callback(null, response); }, (error: unknown) => { callback({ code: GrpcStatus.INTERNAL, details: String(error) }); });
    };
    const pick = (names: string[]): Record<string, Unary> => Object.fromEntries(names.map((n) => [n, wrap(n, handlers[n as keyof typeof handlers])]));
    this.server.addService(pluginService('csi', 'csi.v1.Identity'), pick(['GetPluginInfo', 'GetPluginCapabilities', 'Probe']));
    this.server.addService(pluginService('csi', 'csi.v1.Node'), pick(['NodeGetInfo', 'NodeGetCapabilities', 'NodeStageVolume', 'NodeUnstageVolume', 'NodePublishVolume', 'NodeUnpublishVolume']));
  }

  async start(): Promise<void> {
    await fs.rm(this.options.socketPath, { force: true });
    await new Promise<void>((resolve, reject) => {
      this.server.bindAsync(`unix://${this.options.socketPath}`, ServerCredentials.createInsecure(), (error) => {
        if (error === null) resolve();
        else reject(error);
      });
    });
  }

  stop(): void {
    this.server.forceShutdown();
  }

  calledWith(method: string): Record<string, unknown>[] {
    return this.calls.filter((c) => c.method === method).map((c) => c.request);
  }

  /** The backing directory of a volume ID. */
  backingDir(volumeId: string): string {
    return path.join(this.options.dataDir, volumeId.replace(/[^A-Za-z0-9._-]/g, '_'));
  }

  private async stage(request: Record<string, unknown>): Promise<object> {
    const staging = str(request.stagingTargetPath);
    if (this.options.mount !== true || isMountPoint(staging)) return {};
    const backing = this.backingDir(str(request.volumeId));
    await fs.mkdir(backing, { recursive: true });
    await fs.mkdir(staging, { recursive: true });
    await run('mount', ['--bind', backing, staging]);
    return {};
  }

  private async publish(request: Record<string, unknown>): Promise<object> {
    const target = str(request.targetPath);
    if (this.options.mount !== true || isMountPoint(target)) return {};
    const staging = str(request.stagingTargetPath);
    const source = staging === '' ? this.backingDir(str(request.volumeId)) : staging;
    await fs.mkdir(source, { recursive: true });
    await fs.mkdir(target, { recursive: true });
    await run('mount', ['--bind', source, target]);
    if (request.readonly === true) await run('mount', ['-o', 'remount,bind,ro', target]);
    return {};
  }

  private async unmount(dir: string): Promise<object> {
    if (this.options.mount === true) await unmountAndRemove(dir);
    return {};
  }
}
