/**
 * CRI mounts for one container from its `volumeMounts` (the kubelet's `makeMounts`): volume host
 * paths, `subPath`/`subPathExpr` resolved inside the volume, read-only flags and mount propagation.
 */
import path from 'node:path';
import type { V1Container, V1VolumeMount } from '@kubernetes/client-node';
import type { ImageSpec, Mount, MountPropagation } from '../../cri/types.js';
import { VolumeError } from './errors.js';
import type { PreparedVolumes } from './types.js';

/** Extra inputs of {@link containerMounts}. */
export interface ContainerMountsOptions {
  /**
   * The container's resolved environment, for `$(VAR)` references in `subPathExpr`. Defaults to the
   * literal `value`s of `container.env` (variables from `valueFrom` are then unknown).
   */
  readonly env?: Readonly<Record<string, string>>;
  /** Whether the pod's runtime handler makes read-only mounts recursive (its CRI feature); false when unknown. */
  readonly recursiveReadOnlySupported?: boolean;
  /** The pod's image volumes, pulled: volume name → the image the runtime mounts. */
  readonly imageVolumes?: ReadonlyMap<string, ImageSpec>;
}

/**
 * Whether a mount is made recursively read-only, as the kubelet's `resolveRecursiveReadOnly`:
 * `IfPossible` when the handler can, `Enabled` or an error, never for a writable mount or one with
 * mount propagation.
 * @throws VolumeError (`CreateContainerConfigError`) with the kubelet's message
 */
export function resolveRecursiveReadOnly(mount: V1VolumeMount, supported: boolean): boolean {
  const mode = mount.recursiveReadOnly;
  if (mode === undefined || mode === 'Disabled') return false;
  if (mount.readOnly !== true) throw configError(`volume "${mount.name}" requested recursive read-only mode, but it is not read-only`, mount.name);
  if (mount.mountPropagation !== undefined && mount.mountPropagation !== 'None') {
    throw configError(`volume "${mount.name}" requested recursive read-only mode, but it is not compatible with propagation "${mount.mountPropagation}"`, mount.name);
  }
  if (mode === 'IfPossible') return supported;
  if (mode === 'Enabled') {
    if (!supported) throw configError(`volume "${mount.name}" requested recursive read-only mode, but it is not supported by the runtime`, mount.name);
    return true;
  }
  throw configError(`unknown recursive read-only mode "${mode}"`, mount.name);
}

/** Whether any mount of the container asks for a recursive read-only mode (then the handler's support is needed). */
export function asksRecursiveReadOnly(container: V1Container): boolean {
  return (container.volumeMounts ?? []).some(mountAsksRecursiveReadOnly);
}

/** Whether the mount asks for a recursive read-only mode (`IfPossible` or `Enabled`). */
export function mountAsksRecursiveReadOnly(mount: V1VolumeMount): boolean {
  return mount.recursiveReadOnly !== undefined && mount.recursiveReadOnly !== 'Disabled';
}

function configError(message: string, volumeName?: string): VolumeError {
  return new VolumeError({ reason: 'CreateContainerConfigError', message, ...(volumeName === undefined ? {} : { volumeName }) });
}

/** The literal `value`s of `container.env`, by name (variables from `valueFrom` are left out). */
export function literalEnv(container: V1Container): Record<string, string> {
  const env: Record<string, string> = {};
  for (const variable of container.env ?? []) {
    if (variable.value !== undefined) env[variable.name] = variable.value;
  }
  return env;
}

/**
 * Expands `$(VAR)` references (`$$` is a literal `$`), as the kubelet does for `subPathExpr`.
 * @throws VolumeError when a referenced variable is unset or empty.
 */
export function expandSubPathExpr(expression: string, env: Readonly<Record<string, string>>): string {
  const missing = new Set<string>();
  const expanded = expression.replace(/\$\$|\$\(([^)]*)\)/g, (match, name: string | undefined) => {
    if (match === '$$') return '$';
    const value = env[name ?? ''];
    if (value === undefined || value === '') missing.add(name ?? '');
    return value ?? '';
  });
  if (missing.size > 0) throw configError(`subPathExpr "${expression}": missing value for ${[...missing].sort().join(', ')}`);
  return expanded;
}

/**
 * The mount's subPath (after expansion), cleaned; `''` when it has none.
 * @throws VolumeError when it is absolute or steps out with `..`.
 */
export function mountSubPath(mount: V1VolumeMount, env: Readonly<Record<string, string>>): string {
  if (mount.subPath !== undefined && mount.subPath !== '' && mount.subPathExpr !== undefined && mount.subPathExpr !== '') {
    throw configError(`volume mount "${mount.name}" at ${mount.mountPath}: subPath and subPathExpr are mutually exclusive`, mount.name);
  }
  const raw = mount.subPathExpr !== undefined && mount.subPathExpr !== '' ? expandSubPathExpr(mount.subPathExpr, env) : (mount.subPath ?? '');
  if (raw === '') return '';
  if (path.isAbsolute(raw)) throw configError(`subPath "${raw}" of volume "${mount.name}" must not be an absolute path`, mount.name);
  if (raw.split('/').includes('..')) throw configError(`subPath "${raw}" of volume "${mount.name}" must not contain '..'`, mount.name);
  const cleaned = path.posix.normalize(raw).replace(/\/+$/, '');
  return cleaned === '.' ? '' : cleaned;
}

function propagation(mount: V1VolumeMount): MountPropagation {
  switch (mount.mountPropagation) {
    case undefined:
    case '':
    case 'None':
      return 'PROPAGATION_PRIVATE';
    case 'HostToContainer':
      return 'PROPAGATION_HOST_TO_CONTAINER';
    case 'Bidirectional':
      return 'PROPAGATION_BIDIRECTIONAL';
    default:
      throw configError(`volume mount "${mount.name}": invalid mountPropagation "${mount.mountPropagation}"`, mount.name);
  }
}

/**
 * The CRI mounts of `container`. Pure: it checks subPaths lexically only (absolute paths and `..`
 * are rejected); call `prepareContainerMounts` instead to also create missing subPath directories
 * and reject subPaths that escape their volume through symlinks.
 * @throws VolumeError (`CreateContainerConfigError`) for an unknown volume, an invalid subPath or
 *   propagation mode, or a recursive read-only mode that cannot be had (see {@link resolveRecursiveReadOnly}).
 */
export function containerMounts(container: V1Container, prepared: PreparedVolumes, options: ContainerMountsOptions = {}): Mount[] {
  const env = options.env ?? literalEnv(container);
  return (container.volumeMounts ?? []).map((mount): Mount => {
    const image = options.imageVolumes?.get(mount.name);
    const volumePath = prepared.hostPaths.get(mount.name);
    if (image === undefined && volumePath === undefined) {
      throw configError(`cannot find volume "${mount.name}" to mount into container "${container.name}"`, mount.name);
    }
    const recursiveReadOnly = resolveRecursiveReadOnly(mount, options.recursiveReadOnlySupported ?? false);
    const subPath = mountSubPath(mount, env);
    const common = { containerPath: mount.mountPath, selinuxRelabel: false, propagation: propagation(mount), ...(recursiveReadOnly ? { recursiveReadOnly } : {}) };
    // The runtime mounts the image itself, always read-only (the kubelet's image plugin is read-only).
    if (image !== undefined) return { ...common, hostPath: '', readonly: true, image, ...(subPath === '' ? {} : { imageSubPath: subPath }) };
    return {
      ...common,
      hostPath: subPath === '' ? (volumePath ?? '') : path.join(volumePath ?? '', subPath),
      readonly: mount.readOnly === true || (prepared.readOnlyVolumes?.has(mount.name) ?? false),
    };
  });
}
