/**
 * Finds and loads `api.proto` at runtime. The file lives next to this module in the source tree
 * (`cri/`); the compiled module (`dist/cri/`) falls back to the source tree's copy two levels up,
 * so `npm run build` needs no copy step (copying it next to the build output also works).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadSync } from '@grpc/proto-loader';
import type { MethodDefinition, PackageDefinition, ServiceDefinition } from '@grpc/proto-loader';

/** The CRI services in `api.proto`. */
export type CriServiceName = 'RuntimeService' | 'ImageService';

/** The RuntimeService methods nodelet calls. */
export type RuntimeMethod =
  | 'Version'
  | 'Status'
  | 'RuntimeConfig'
  | 'CheckpointContainer'
  | 'RunPodSandbox'
  | 'StopPodSandbox'
  | 'RemovePodSandbox'
  | 'PodSandboxStatus'
  | 'ListPodSandbox'
  | 'CreateContainer'
  | 'StartContainer'
  | 'StopContainer'
  | 'RemoveContainer'
  | 'ListContainers'
  | 'ContainerStatus'
  | 'UpdateContainerResources'
  | 'ReopenContainerLog'
  | 'ExecSync'
  | 'Exec'
  | 'Attach'
  | 'PortForward'
  | 'ListContainerStats';

/** The ImageService methods nodelet calls. */
export type ImageMethod = 'ImageStatus' | 'PullImage' | 'ListImages' | 'RemoveImage' | 'ImageFsInfo';

/**
 * How decoded messages look (see `wire.ts`): camelCase names, int64 as strings (no precision loss,
 * no Long objects), enums by name, and defaults filled in so scalars are never missing.
 */
const LOADER_OPTIONS = { keepCase: false, longs: String, enums: String, defaults: true, oneofs: false };

const CANDIDATES = ['./api.proto', '../../cri/api.proto'];

/** Absolute path of `api.proto`, from either the source tree or the build output. */
export function locateCriProto(): string {
  for (const candidate of CANDIDATES) {
    const path = fileURLToPath(new URL(candidate, import.meta.url));
    if (existsSync(path)) return path;
  }
  throw new Error(`cri/api.proto not found next to ${fileURLToPath(import.meta.url)} nor in the source tree`);
}

let cached: PackageDefinition | undefined;

/** The loaded `runtime.v1` package definition (loaded once per process). */
export function loadCriPackage(): PackageDefinition {
  cached ??= loadSync(locateCriProto(), LOADER_OPTIONS);
  return cached;
}

function isService(definition: PackageDefinition[string] | undefined): definition is ServiceDefinition {
  // Message and enum definitions carry a `format` tag; services are plain method maps.
  return definition !== undefined && !('format' in definition);
}

/** The service definition, e.g. for an in-process test server. */
export function criService(service: CriServiceName): ServiceDefinition {
  const definition = loadCriPackage()[`runtime.v1.${service}`];
  if (!isService(definition)) throw new Error(`api.proto has no service runtime.v1.${service}`);
  return definition;
}

/** One method's path and (de)serializers. */
export function criMethod(service: CriServiceName, method: string): MethodDefinition<object, object> {
  const definition = criService(service)[method];
  if (definition === undefined) throw new Error(`api.proto has no method runtime.v1.${service}/${method}`);
  return definition;
}
