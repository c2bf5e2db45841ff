/**
 * `kubernetes_build_info` and `kubernetes_feature_enabled`, as every Kubernetes component exposes
 * them (component-base `metrics/prometheus/version` and `…/feature`), with nodelet's truth:
 *
 * - build info: nodelet's own version (`v<package version>-nodelet`, the Node's `kubeletVersion`),
 *   its major and minor, the git commit when the build stamped one (`NODELET_GIT_COMMIT`), the
 *   platform it runs on. nodelet is not built by a Go compiler: `go_version` and `compiler` are
 *   empty, and so are a build date and tree state no build records.
 * - features: only the kubelet feature gates whose behaviour nodelet implements, each at the
 *   kubelet v1.37.2's stage and default (all on), and on here because nodelet does that work. A
 *   gate nodelet does not implement is not listed at all: saying 0 would claim a switch nodelet
 *   does not have, and saying the kubelet's default would claim behaviour it lacks.
 */
import type { MetricsRegistry } from '../util/metrics.js';

/** A feature gate of the kubelet whose behaviour nodelet implements, with its stage in v1.37.2 (`''`: GA). */
export interface ImplementedFeature {
  readonly name: string;
  readonly stage: '' | 'BETA' | 'ALPHA' | 'DEPRECATED';
}

/** The gates, each with where nodelet does the work (docs/node-server.md keeps the list). */
export const IMPLEMENTED_FEATURES: readonly ImplementedFeature[] = [
  { name: 'ContainerCheckpoint', stage: 'BETA' }, // /checkpoint (server/checkpoint.ts)
  { name: 'GracefulNodeShutdown', stage: 'BETA' }, // controllers/shutdown
  { name: 'GracefulNodeShutdownBasedOnPodPriority', stage: 'BETA' }, // controllers/shutdown/shutdown-plan.ts
  { name: 'ImageMaximumGCAge', stage: '' }, // controllers/gc (imageMaximumGCAge)
  { name: 'ImageVolume', stage: '' }, // reconcilers/runtime/image-volumes.ts
  { name: 'InPlacePodVerticalScaling', stage: '' }, // reconcilers/resize
  { name: 'KubeletEnsureSecretPulledImages', stage: 'BETA' }, // reconcilers/images/pull-verification.ts
  { name: 'NodeLogQuery', stage: '' }, // /logs/?query= (server/node-log-query.ts)
  { name: 'RecursiveReadOnlyMounts', stage: '' }, // reconcilers/container, runtime features
  { name: 'UserNamespacesSupport', stage: '' }, // reconcilers/userns
];

/** What `kubernetes_build_info` says. */
export interface BuildInfo {
  /** e.g. `0.1.0` (the package version). */
  readonly packageVersion: string;
  /** The commit the build was made from, when stamped; empty otherwise. */
  readonly gitCommit: string;
}

/** Go's `GOOS/GOARCH` spelling of this process's platform. */
export function goPlatform(platform: string = process.platform, arch: string = process.arch): string {
  const goArch: Readonly<Record<string, string>> = { x64: 'amd64', ia32: '386', arm64: 'arm64', arm: 'arm', ppc64: 'ppc64le', s390x: 's390x' };
  return `${platform}/${goArch[arch] ?? arch}`;
}

/** The build info labels. Pure. */
export function buildInfoLabels(info: BuildInfo, platform: string): Readonly<Record<string, string>> {
  const [major = '', minor = ''] = info.packageVersion.split('.');
  return {
    major,
    minor,
    git_version: `v${info.packageVersion}-nodelet`,
    git_commit: info.gitCommit,
    git_tree_state: '',
    build_date: '',
    go_version: '',
    compiler: '',
    platform,
  };
}

/** Registers both families with their constant series. */
export function registerBuildInfo(registry: MetricsRegistry, info: BuildInfo): void {
  const labels = buildInfoLabels(info, goPlatform());
  registry.gauge({ name: 'kubernetes_build_info', help: "[BETA] A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.", labelNames: Object.keys(labels).sort() }).set(labels, 1);
  const features = registry.gauge({ name: 'kubernetes_feature_enabled', help: '[BETA] This metric records the data about the stage and enablement of a k8s feature.', labelNames: ['name', 'stage'] });
  for (const feature of IMPLEMENTED_FEATURES) features.set({ name: feature.name, stage: feature.stage }, 1);
}
