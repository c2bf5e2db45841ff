/**
 * The Linux security context of a container, as the kubelet builds it (kuberuntime
 * `determineEffectiveSecurityContext`, `getSeccompProfile`, `getAppArmorProfile`,
 * `verifyRunAsNonRoot`; pkg/securitycontext). Pure functions over the pod, the node's settings
 * and the image's user.
 *
 * - Effective settings: the container's field wins over the pod's (runAsUser, runAsGroup,
 *   runAsNonRoot); the rest is container-only.
 * - /proc: every container gets the kubelet's masked and read-only paths unless its `procMount`
 *   is `Unmasked`. containerd replaces its own defaults with what it is sent, so sending nothing
 *   would mean nothing masked. (containerd clears them for privileged containers.)
 * - seccomp: container profile, else pod profile, else the kubelet's default (Unconfined while
 *   `seccompDefault` is off, as in v1.36's defaults). Localhost profiles are paths under the
 *   seccomp profile root.
 * - AppArmor: container field, else the legacy `container.apparmor.security.beta.kubernetes.io/<name>`
 *   annotation, else pod field; none is sent when nothing asks for one.
 * - User: with no runAsUser anywhere, the image's user (from ImageStatus) is sent, a numeric one
 *   as run_as_user and a name as run_as_username; an image with no user runs as root (uid 0).
 * - SELinux: the container's `seLinuxOptions`, else the pod's, as a whole (not field by field);
 *   the sandbox gets the pod's. The runtime applies them only on a host with SELinux enabled.
 */
import type { V1Container, V1Pod, V1SELinuxOptions, V1SeccompProfile } from '@kubernetes/client-node';
import type { Image, LinuxContainerSecurityContext, SecurityProfile, SELinuxOption } from '../../cri/types.js';

/** The node's settings for container security (agent flags and host facts). */
export interface ContainerSecuritySettings {
  /** Directory `Localhost` seccomp profiles are relative to: the kubelet's `<root-dir>/seccomp`. */
  readonly seccompProfileRoot: string;
  /** The kubelet's `seccompDefault`: RuntimeDefault instead of Unconfined for containers without a profile. */
  readonly seccompDefault: boolean;
  /** Masked paths of a container with the default procMount (see {@link hostMaskedPaths}). */
  readonly maskedPaths: readonly string[];
}

/** The kubelet's default masked paths (pkg/securitycontext/util.go, in sync with moby). */
export const DEFAULT_MASKED_PATHS: readonly string[] = [
  '/proc/asound',
  '/proc/acpi',
  '/proc/interrupts',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/sys/firmware',
  '/sys/devices/virtual/powercap',
];

/** The kubelet's default read-only paths. */
export const DEFAULT_READONLY_PATHS: readonly string[] = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];

/** The kubelet's legacy per-container AppArmor annotation prefix. */
export const APPARMOR_ANNOTATION_PREFIX = 'container.apparmor.security.beta.kubernetes.io/';

/** The user an image runs as, from CRI ImageStatus: a uid, or a name that cannot be checked. */
export type ImageUser = { readonly uid: bigint } | { readonly username: string };

/**
 * The kubelet's `getImageUser`: the image's numeric user, else its user name, else root — an image
 * that names no user (or one the runtime does not know) runs as uid 0.
 */
export function imageUserOf(image: Image | undefined): ImageUser {
  if (image?.uid !== undefined) return { uid: image.uid };
  if (image?.username !== undefined && image.username !== '') return { username: image.username };
  return { uid: 0n };
}

/**
 * `/proc/self`-style parse of `/sys/devices/system/cpu/possible` (`0-3,5`); undefined when it does
 * not parse, so the caller falls back to the CPU count as the kubelet does.
 */
export function parseCpuList(text: string): number[] | undefined {
  const cpus: number[] = [];
  for (const range of text.trim().split(',')) {
    const match = /^(\d+)(?:-(\d+))?$/.exec(range);
    if (match === null) return undefined;
    const start = Number(match[1]);
    const end = match[2] === undefined ? start : Number(match[2]);
    for (let cpu = start; cpu <= end; cpu++) cpus.push(cpu);
  }
  return cpus;
}

/**
 * The masked paths of this host: the defaults plus `/sys/devices/system/cpu/cpu<N>/thermal_throttle`
 * for every possible CPU where it exists (the kubelet computes the same list once at start-up).
 */
export function hostMaskedPaths(cpus: readonly number[], exists: (path: string) => boolean): string[] {
  const thermal = cpus.map((cpu) => `/sys/devices/system/cpu/cpu${cpu}/thermal_throttle`).filter(exists);
  return [...DEFAULT_MASKED_PATHS, ...thermal];
}

/** The fields the pod's and the container's security contexts merge into. */
export interface EffectiveSecurity {
  readonly runAsUser?: number;
  readonly runAsGroup?: number;
  readonly runAsNonRoot?: boolean;
}

/** The kubelet's `DetermineEffectiveSecurityContext` for the fields the pod level also has. */
export function effectiveSecurity(pod: V1Pod, container: V1Container): EffectiveSecurity {
  const podSc = pod.spec?.securityContext;
  const sc = container.securityContext;
  const runAsUser = sc?.runAsUser ?? podSc?.runAsUser;
  const runAsGroup = sc?.runAsGroup ?? podSc?.runAsGroup;
  const runAsNonRoot = sc?.runAsNonRoot ?? podSc?.runAsNonRoot;
  return {
    ...(runAsUser === undefined ? {} : { runAsUser }),
    ...(runAsGroup === undefined ? {} : { runAsGroup }),
    ...(runAsNonRoot === undefined ? {} : { runAsNonRoot }),
  };
}

/** The kubelet's pod description in messages: `name_namespace(uid)`. */
export function formatPod(pod: V1Pod): string {
  return `${pod.metadata?.name ?? ''}_${pod.metadata?.namespace ?? ''}(${pod.metadata?.uid ?? ''})`;
}

const MAX_USER_ID = 2147483647n;

/**
 * The kubelet's `verifyRunAsNonRoot`: the message of the error it fails container creation with
 * (`CreateContainerConfigError`), or undefined when the container may run.
 */
export function verifyRunAsNonRoot(pod: V1Pod, container: V1Container, user: ImageUser): string | undefined {
  const effective = effectiveSecurity(pod, container);
  if (effective.runAsNonRoot !== true) return undefined;
  const where = `(pod: ${JSON.stringify(formatPod(pod))}, container: ${container.name})`;
  if (effective.runAsUser !== undefined) {
    return effective.runAsUser === 0 ? `container's runAsUser breaks non-root policy ${where}` : undefined;
  }
  if ('username' in user) return `container has runAsNonRoot and image has non-numeric user (${user.username}), cannot verify user is non-root ${where}`;
  if (user.uid === 0n) return `container has runAsNonRoot and image will run as root ${where}`;
  if (user.uid < 0n || user.uid > MAX_USER_ID) {
    return `container has runAsNonRoot and image has an invalid user id (${user.uid}). (Must be 1-(${MAX_USER_ID})): must be between 0 and ${MAX_USER_ID}, inclusive ${where}`;
  }
  return undefined;
}

/** A profile the spec asks for but that cannot be sent (a Localhost type without a name). */
export class InvalidSecurityProfileError extends Error {
  override readonly name = 'InvalidSecurityProfileError';
}

export function isInvalidSecurityProfileError(error: unknown): error is InvalidSecurityProfileError {
  return error instanceof InvalidSecurityProfileError;
}

function fieldSeccompProfile(profile: V1SeccompProfile, root: string): SecurityProfile {
  if (profile.type === 'RuntimeDefault') return { profileType: 'RuntimeDefault' };
  if (profile.type === 'Localhost') {
    const name = profile.localhostProfile ?? '';
    if (name === '') throw new InvalidSecurityProfileError('localhostProfile must be set if seccompProfile type is Localhost.');
    return { profileType: 'Localhost', localhostRef: joinPath(root, name) };
  }
  return { profileType: 'Unconfined' };
}

/** Go's `filepath.Join` for the profile root and a relative profile name. */
function joinPath(root: string, name: string): string {
  const parts = `${root}/${name}`.split('/');
  const out: string[] = [];
  for (const part of parts) {
    if (part === '' || part === '.') continue;
    if (part === '..') out.pop();
    else out.push(part);
  }
  return `${root.startsWith('/') ? '/' : ''}${out.join('/')}`;
}

/**
 * The kubelet's `getSeccompProfile`: the container's profile, else the pod's, else RuntimeDefault
 * with `seccompDefault` and Unconfined without. @throws InvalidSecurityProfileError
 */
export function seccompProfile(pod: V1Pod, container: V1Container, settings: ContainerSecuritySettings): SecurityProfile {
  const profile = container.securityContext?.seccompProfile ?? pod.spec?.securityContext?.seccompProfile;
  if (profile !== undefined) return fieldSeccompProfile(profile, settings.seccompProfileRoot);
  return { profileType: settings.seccompDefault ? 'RuntimeDefault' : 'Unconfined' };
}

/** An AppArmor profile as the API spells it. */
export interface AppArmorSpec {
  readonly type: 'RuntimeDefault' | 'Unconfined' | 'Localhost';
  readonly localhostProfile?: string;
}

function appArmorFromAnnotation(value: string | undefined): AppArmorSpec | undefined {
  if (value === undefined) return undefined;
  if (value === 'runtime/default') return { type: 'RuntimeDefault' };
  if (value === 'unconfined') return { type: 'Unconfined' };
  if (value.startsWith('localhost/')) return { type: 'Localhost', localhostProfile: value.slice('localhost/'.length) };
  return undefined;
}

function appArmorFromField(field: { type: string; localhostProfile?: string } | undefined): AppArmorSpec | undefined {
  if (field === undefined) return undefined;
  if (field.type === 'RuntimeDefault' || field.type === 'Unconfined') return { type: field.type };
  return { type: 'Localhost', ...(field.localhostProfile === undefined ? {} : { localhostProfile: field.localhostProfile }) };
}

/**
 * The kubelet's `apparmor.GetProfile`: the container's field, else the legacy annotation (static
 * pods may not have had it synced to fields), else the pod's field; undefined when none.
 */
export function appArmorSpecOf(pod: V1Pod, container: V1Container): AppArmorSpec | undefined {
  return (
    appArmorFromField(container.securityContext?.appArmorProfile) ??
    appArmorFromAnnotation(pod.metadata?.annotations?.[`${APPARMOR_ANNOTATION_PREFIX}${container.name}`]) ??
    appArmorFromField(pod.spec?.securityContext?.appArmorProfile)
  );
}

/** The CRI AppArmor fields (profile and its deprecated string form), or none. @throws InvalidSecurityProfileError */
export function appArmorProfile(pod: V1Pod, container: V1Container): Pick<LinuxContainerSecurityContext, 'apparmor' | 'apparmorProfile'> {
  const spec = appArmorSpecOf(pod, container);
  if (spec === undefined) return {};
  if (spec.type === 'RuntimeDefault') return { apparmor: { profileType: 'RuntimeDefault' }, apparmorProfile: 'runtime/default' };
  if (spec.type === 'Unconfined') return { apparmor: { profileType: 'Unconfined' }, apparmorProfile: 'unconfined' };
  if (spec.localhostProfile === undefined) throw new InvalidSecurityProfileError('missing localhost apparmor profile name');
  return { apparmor: { profileType: 'Localhost', localhostRef: spec.localhostProfile }, apparmorProfile: `localhost/${spec.localhostProfile}` };
}

/**
 * The pod's `supplementalGroupsPolicy` for the sandbox's and every container's CRI security
 * context, as the kubelet sends it (only when set; admission refused Strict where the runtime
 * cannot enforce it).
 */
export function supplementalGroupsPolicyOf(pod: V1Pod): { supplementalGroupsPolicy?: 'Merge' | 'Strict' } {
  const policy = pod.spec?.securityContext?.supplementalGroupsPolicy;
  return policy === 'Merge' || policy === 'Strict' ? { supplementalGroupsPolicy: policy } : {};
}

/** fsGroup first, then supplementalGroups, as the kubelet orders them. */
export function podSupplementalGroups(pod: V1Pod): bigint[] {
  const sc = pod.spec?.securityContext;
  return [...(sc?.fsGroup === undefined ? [] : [sc.fsGroup]), ...(sc?.supplementalGroups ?? [])].map((g) => BigInt(g));
}

/** The user fields: the spec's, else the image's (numeric as run_as_user, a name as run_as_username). */
function userFields(effective: EffectiveSecurity, user: ImageUser): Pick<LinuxContainerSecurityContext, 'runAsUser' | 'runAsUsername' | 'runAsGroup'> {
  const group = effective.runAsGroup === undefined ? {} : { runAsGroup: BigInt(effective.runAsGroup) };
  if (effective.runAsUser !== undefined) return { runAsUser: BigInt(effective.runAsUser), ...group };
  return { ...('uid' in user ? { runAsUser: user.uid } : { runAsUsername: user.username }), ...group };
}

/** What {@link containerSecurityContext} is given. */
export interface ContainerSecurityInput {
  readonly pod: V1Pod;
  readonly container: V1Container;
  readonly settings: ContainerSecuritySettings;
  /** The image's user (ImageStatus); see {@link imageUserOf}. */
  readonly imageUser: ImageUser;
}

/**
 * The CRI security context of a container, but for its namespace options (the sandbox's). Pure.
 * @throws InvalidSecurityProfileError
 */
export function containerSecurityContext(input: ContainerSecurityInput): LinuxContainerSecurityContext {
  const { pod, container, settings } = input;
  const sc = container.securityContext;
  const unmasked = sc?.procMount === 'Unmasked';
  return {
    privileged: sc?.privileged === true,
    ...userFields(effectiveSecurity(pod, container), input.imageUser),
    supplementalGroups: podSupplementalGroups(pod),
    ...supplementalGroupsPolicyOf(pod),
    readonlyRootfs: sc?.readOnlyRootFilesystem === true,
    noNewPrivs: sc?.allowPrivilegeEscalation === false,
    capabilities: { addCapabilities: sc?.capabilities?.add ?? [], dropCapabilities: sc?.capabilities?.drop ?? [] },
    maskedPaths: unmasked ? [] : [...settings.maskedPaths],
    readonlyPaths: unmasked ? [] : [...DEFAULT_READONLY_PATHS],
    seccomp: seccompProfile(pod, container, settings),
    ...appArmorProfile(pod, container),
    ...selinuxField(containerSELinuxOptions(pod, container)),
  };
}

/** The API's SELinux options as the CRI's (the kubelet's `convertToRuntimeSELinuxOption`). */
export function runtimeSELinuxOption(options: V1SELinuxOptions | undefined): SELinuxOption | undefined {
  if (options === undefined) return undefined;
  return { user: options.user ?? '', role: options.role ?? '', type: options.type ?? '', level: options.level ?? '' };
}

/** The container's SELinux options: its own replace the pod's as a whole (`DetermineEffectiveSecurityContext`). */
export function containerSELinuxOptions(pod: V1Pod, container: V1Container): SELinuxOption | undefined {
  return runtimeSELinuxOption(container.securityContext?.seLinuxOptions ?? pod.spec?.securityContext?.seLinuxOptions);
}

function selinuxField(options: SELinuxOption | undefined): { selinuxOptions?: SELinuxOption } {
  return options === undefined ? {} : { selinuxOptions: options };
}

/** Every container of the pod (init, regular, ephemeral). */
function allContainers(pod: V1Pod): { securityContext?: { privileged?: boolean } }[] {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? []), ...(pod.spec?.ephemeralContainers ?? [])];
}

/** The kubelet's `HasPrivilegedContainer`: the sandbox must be privileged for any privileged container. */
export function hasPrivilegedContainer(pod: V1Pod): boolean {
  return allContainers(pod).some((c) => c.securityContext?.privileged === true);
}
