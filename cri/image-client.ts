/**
 * `ImageService` over gRPC. Pulls get their own, long deadline (a registry can be slow); an
 * absent image is `undefined` from `imageStatus` and a no-op for `removeImage`.
 */
import { isCriNotFound } from './errors.js';
import { authConfigToWire, imageSpecToWire, podSandboxConfigToWire } from './convert-request.js';
import { filesystemUsageFromWire, imageFromWire, requireId } from './convert-response.js';
import type { ImageMethod } from './proto.js';
import { ignoreNotFound, requireArgument } from './transport.js';
import type { ServiceClientOptions } from './runtime-client.js';
import type { AuthConfig, CallOptions, FilesystemUsage, Image, ImageService, ImageSpec, PodSandboxConfig } from './types.js';
import type { ImageResponses } from './wire.js';

/** Pull deadline when neither the call nor the client configures one. */
export const DEFAULT_PULL_TIMEOUT_MS = 5 * 60_000;

export interface ImageClientOptions extends ServiceClientOptions {
  /** Deadline of `pullImage` when its `CallOptions` give none. */
  readonly pullTimeoutMs?: number;
}

interface ImageCall<M extends ImageMethod> {
  readonly method: M;
  readonly request: object;
  readonly timeoutMs: number;
  readonly subject?: string;
  readonly signal?: AbortSignal;
}

export class GrpcImageService implements ImageService {
  constructor(private readonly options: ImageClientOptions) {}

  async imageStatus(image: ImageSpec, options?: CallOptions): Promise<Image | undefined> {
    requireArgument('ImageStatus', 'image', image.image);
    const request = { image: imageSpecToWire(image), verbose: false };
    const call = { method: 'ImageStatus', request, timeoutMs: this.timeout(options), subject: image.image, ...signalOf(options) } as const;
    try {
      return await this.call(call, (wire) =>
        wire.image === null ? undefined : imageFromWire('ImageStatus', wire.image),
      );
    } catch (e: unknown) {
      // containerd answers "no image" with an empty response; other runtimes use NotFound.
      if (isCriNotFound(e)) return undefined;
      throw e;
    }
  }

  async pullImage(
    image: ImageSpec,
    auth?: AuthConfig,
    sandboxConfig?: PodSandboxConfig,
    options?: CallOptions,
  ): Promise<string> {
    requireArgument('PullImage', 'image', image.image);
    const request = {
      image: imageSpecToWire(image),
      auth: authConfigToWire(auth),
      sandboxConfig: sandboxConfig === undefined ? undefined : podSandboxConfigToWire(sandboxConfig),
    };
    const timeoutMs = options?.timeoutMs ?? this.options.pullTimeoutMs ?? DEFAULT_PULL_TIMEOUT_MS;
    const call = { method: 'PullImage', request, timeoutMs, subject: image.image, ...signalOf(options) } as const;
    return this.call(call, (wire) => requireId('PullImage', 'image reference', wire.imageRef));
  }

  listImages(options?: CallOptions): Promise<Image[]> {
    const call = { method: 'ListImages', request: {}, timeoutMs: this.timeout(options), ...signalOf(options) } as const;
    return this.call(call, (wire) => wire.images.map((i) => imageFromWire('ListImages', i)));
  }

  async removeImage(image: ImageSpec, options?: CallOptions): Promise<void> {
    requireArgument('RemoveImage', 'image', image.image);
    const request = { image: imageSpecToWire(image) };
    const call = { method: 'RemoveImage', request, timeoutMs: this.timeout(options), subject: image.image, ...signalOf(options) } as const;
    await ignoreNotFound(this.call(call, () => undefined));
  }

  imageFsInfo(options?: CallOptions): Promise<FilesystemUsage[]> {
    const call = { method: 'ImageFsInfo', request: {}, timeoutMs: this.timeout(options), ...signalOf(options) } as const;
    return this.call(call, (wire) => wire.imageFilesystems.map((fs) => filesystemUsageFromWire('ImageFsInfo', fs)));
  }

  private timeout(options: CallOptions | undefined): number {
    return options?.timeoutMs ?? this.options.defaultTimeoutMs;
  }

  /** Sends `call` and converts the response, typed by method (`wire.ts`). */
  private call<M extends ImageMethod, R>(call: ImageCall<M>, convert: (wire: ImageResponses[M]) => R): Promise<R> {
    // The loader options and api.proto guarantee this shape for method M (see wire.ts).
    return this.options.transport.call({ service: 'ImageService', ...call }, (wire) => convert(wire as ImageResponses[M]));
  }
}

function signalOf(options: CallOptions | undefined): { signal?: AbortSignal } {
  return options?.signal === undefined ? {} : { signal: options.signal };
}
