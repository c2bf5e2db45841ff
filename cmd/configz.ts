/**
 * The node server's `/configz`: the agent's configuration as a kubelet.config.k8s.io/v1beta1
 * KubeletConfiguration, the fields `--config` reads (`kubelet-config.ts`) with the values the agent
 * started with, so that what `/configz` shows can be given back as `--config`. Settings the
 * NodeAgent changes live (maxPods, reservations, image pulls, eviction) show their start values;
 * the NodeAgent's status shows the live ones.
 */
import { formatGoDurationSeconds } from '../util/go-duration.js';
import type { AgentSettings } from './flags.js';

function withoutUndefined(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

function nodeServerFields(s: AgentSettings): Record<string, unknown> {
  const server = s.nodeServer;
  return {
    port: server.port,
    tlsCertFile: server.tlsCertFile,
    tlsPrivateKeyFile: server.tlsPrivateKeyFile,
    serverTLSBootstrap: server.rotateServerCertificates,
    readOnlyPort: 0,
    // The node server keeps reviews as long as the kubelet's defaults: a token 2 min, an allowed access 5 min, a denied one 30 s.
    authentication: { x509: withoutUndefined({ clientCAFile: server.clientCaFile }), webhook: { enabled: true, cacheTTL: '2m0s' }, anonymous: { enabled: false } },
    authorization: { mode: 'Webhook', webhook: { cacheAuthorizedTTL: '5m0s', cacheUnauthorizedTTL: '30s' } },
    healthzPort: s.healthz.port,
    healthzBindAddress: s.healthz.address,
    enableSystemLogQuery: server.enableSystemLogQuery,
  };
}

function podFields(s: AgentSettings): Record<string, unknown> {
  return {
    maxPods: s.maxPods,
    clusterDNS: [...s.clusterDns],
    clusterDomain: s.clusterDomain,
    resolvConf: s.resolvConf,
    allowedUnsafeSysctls: [...s.allowedUnsafeSysctls],
    seccompDefault: s.seccompDefault,
    registerWithTaints: s.registerWithTaints.map((t) => withoutUndefined({ key: t.key, value: t.value, effect: t.effect })),
    podLogsDir: s.podLogDir,
    staticPodPath: s.podManifestPath,
    staticPodURL: s.manifestUrl?.url,
    httpCheckFrequency: s.manifestUrl === undefined ? undefined : formatGoDurationSeconds(s.manifestUrl.periodMs / 1000),
    rotateCertificates: s.credentials?.rotate,
    kubeAPIQPS: s.kubeApi.qps,
    kubeAPIBurst: s.kubeApi.burst,
  };
}

function resourceFields(s: AgentSettings): Record<string, unknown> {
  const { eviction, gc, imagePulls, logRotation, cgroups } = s;
  return {
    systemReserved: { ...s.systemReserved },
    kubeReserved: { ...s.kubeReserved },
    serializeImagePulls: imagePulls.serializeImagePulls,
    maxParallelImagePulls: imagePulls.maxParallelImagePulls ?? undefined,
    registryPullQPS: imagePulls.registryPullQPS,
    registryBurst: imagePulls.registryBurst,
    evictionHard: { ...eviction.hard },
    evictionSoft: { ...eviction.soft },
    evictionSoftGracePeriod: { ...eviction.softGracePeriod },
    evictionMinimumReclaim: { ...eviction.minimumReclaim },
    evictionPressureTransitionPeriod: formatGoDurationSeconds(eviction.pressureTransitionPeriodSeconds),
    evictionMaxPodGracePeriod: eviction.maxPodGracePeriodSeconds,
    imageGCHighThresholdPercent: gc.imageHighThresholdPercent,
    imageGCLowThresholdPercent: gc.imageLowThresholdPercent,
    imageMinimumGCAge: formatGoDurationSeconds(gc.imageMinimumGCAgeSeconds),
    imageMaximumGCAge: formatGoDurationSeconds(gc.imageMaximumGCAgeSeconds),
    containerLogMaxSize: logRotation.containerLogMaxSize,
    containerLogMaxFiles: logRotation.containerLogMaxFiles,
    cgroupsPerQOS: cgroups !== undefined,
    cgroupRoot: cgroups?.cgroupRoot,
    podPidsLimit: cgroups?.podPidsLimit,
    cpuCFSQuota: cgroups?.enforceCpuLimits,
  };
}

function shutdownFields({ shutdown }: AgentSettings): Record<string, unknown> {
  return {
    shutdownGracePeriod: formatGoDurationSeconds(shutdown.gracePeriodSeconds),
    shutdownGracePeriodCriticalPods: formatGoDurationSeconds(shutdown.criticalPodsGracePeriodSeconds),
    shutdownGracePeriodByPodPriority: shutdown.byPodPriority.length === 0 ? undefined : shutdown.byPodPriority.map((g) => ({ ...g })),
  };
}

/** The agent's settings as the KubeletConfiguration `/configz` shows. */
export function kubeletConfigurationOf(s: AgentSettings): Record<string, unknown> {
  return withoutUndefined({
    kind: 'KubeletConfiguration',
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    containerRuntimeEndpoint: s.criEndpoint,
    ...nodeServerFields(s),
    ...podFields(s),
    ...resourceFields(s),
    ...shutdownFields(s),
  });
}
