/**
 * Pod admission: the handlers of this node, in the kubelet's order, and the per-pod admitter.
 * A new handler is one more entry in {@link admitHandlers}.
 */
import { appArmorAdmitHandler, type AppArmorHost } from './apparmor.js';
import type { PodAdmitHandler } from './admit.js';
import { generalPredicatesAdmitHandler, osSelectorAdmitHandler } from './general-predicates.js';
import { nodePressureAdmitHandler } from './node-pressure.js';
import { podOsAdmitHandler } from './pod-os.js';
import { declaredFeaturesAdmitHandler } from './declared-features.js';
import { nodeShutdownAdmitHandler, type NodeShutdownStatus } from './node-shutdown.js';
import { supplementalGroupsPolicyAdmitHandler } from './supplemental-groups.js';
import { deviceAdmitHandler, withAllocatedDevices } from './devices.js';
import type { DeviceAdmissionView } from '../devices/device-manager.js';
import { safeSysctls, sysctlAdmitHandler, sysctlAllowlist } from './sysctls.js';

export { admitPod, type AdmitResult, type PodAdmitAttributes, type PodAdmitHandler, type Rejection } from './admit.js';
export { PodAdmitter, rejectedStatusMessage, type AdmitDecision, type PodAdmitterOptions } from './pod-admitter.js';
export { allocateFailedMessage, deviceShortfall } from './devices.js';
export { APPARMOR_NOT_ENABLED, type AppArmorHost } from './apparmor.js';
export { NODE_SHUTDOWN_REJECTED_MESSAGE, NODE_SHUTDOWN_REJECTED_REASON, type NodeShutdownStatus } from './node-shutdown.js';
export { EVICTED_REASON, isCriticalPod, isEvictedStatus, nodeConditionMessage, pressureConditions } from './node-pressure.js';
export { InvalidSysctlPatternError, isInvalidSysctlPatternError, sysctlAllowlist } from './sysctls.js';

/** What the node's admission rules depend on. */
export interface AdmissionSettings {
  /** `--allowed-unsafe-sysctls`: names or patterns ending in `*`, on top of the safe sysctls. */
  readonly allowedUnsafeSysctls: readonly string[];
  /** `uname -r`: which safe sysctls this kernel namespaces. */
  readonly kernelVersion: string;
  readonly appArmor: AppArmorHost;
  /** The node shutdown manager's mark; absent: graceful node shutdown is off, nothing refused for it. */
  readonly nodeShutdown?: NodeShutdownStatus;
  /** The device manager's view; absent: no device plugins, extended resources only as the Node advertises them. */
  readonly devices?: DeviceAdmissionView;
}

/** The node's admit handlers. @throws InvalidSysctlPatternError on a bad `--allowed-unsafe-sysctls` entry. */
export function admitHandlers(settings: AdmissionSettings): PodAdmitHandler[] {
  const devices = settings.devices;
  return [
    // The kubelet's eviction manager admits first: no new pods while the node is under pressure.
    nodePressureAdmitHandler(),
    sysctlAdmitHandler(sysctlAllowlist([...safeSysctls(settings.kernelVersion), ...settings.allowedUnsafeSysctls])),
    // The kubelet's resource allocation handler (device plugins) comes before its predicates.
    ...(devices === undefined ? [] : [deviceAdmitHandler(devices)]),
    appArmorAdmitHandler(settings.appArmor),
    // The kubelet's predicate handler: the OS label, the OS field, the supplemental groups
    // policy (checks preemption cannot help), then the general predicates.
    osSelectorAdmitHandler(),
    podOsAdmitHandler(),
    supplementalGroupsPolicyAdmitHandler(),
    generalPredicatesAdmitHandler(devices === undefined ? undefined : (pod, node) => withAllocatedDevices(pod, node, devices)),
    // The node features the pod needs that the node does not declare.
    declaredFeaturesAdmitHandler(),
    // Last, as the kubelet's shutdown manager: no new pods on a node shutting down.
    ...(settings.nodeShutdown === undefined ? [] : [nodeShutdownAdmitHandler(settings.nodeShutdown)]),
  ];
}
