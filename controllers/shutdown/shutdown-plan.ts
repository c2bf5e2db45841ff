/**
 * Graceful node shutdown's decisions, pure (the kubelet's nodeshutdown podManager): the shutdown
 * groups from the settings, which group each pod falls in, the grace period each pod gets, and how
 * long the host must be held in all.
 *
 * - `shutdownGracePeriodByPodPriority` names the groups directly; otherwise `shutdownGracePeriod`
 *   and `shutdownGracePeriodCriticalPods` become two: priority 0 (regular pods) gets the difference,
 *   priority 2000000000 (system-cluster-critical and up) the critical share. Groups run in
 *   ascending priority, each waiting for its pods or its own period, whichever comes first.
 * - A pod falls in the group of the highest priority not above its own (below the lowest: the
 *   lowest; a pod without a priority counts as 0).
 * - A pod gets the group's period, or its own `terminationGracePeriodSeconds` when that is shorter.
 */
import type { V1Pod } from '@kubernetes/client-node';

/** One shutdown group: pods from this priority up (to the next group) get this many seconds. */
export interface ShutdownGroupPeriod {
  readonly priority: number;
  readonly shutdownGracePeriodSeconds: number;
}

/** The settings, as the kubelet's three fields. */
export interface ShutdownSettings {
  /** `shutdownGracePeriod` in seconds (0: graceful shutdown is off unless by-priority groups are set). */
  readonly gracePeriodSeconds: number;
  /** `shutdownGracePeriodCriticalPods` in seconds, part of the above. */
  readonly criticalPodsGracePeriodSeconds: number;
  /** `shutdownGracePeriodByPodPriority`; when set, the two above must be 0. */
  readonly byPodPriority: readonly ShutdownGroupPeriod[];
}

/** Graceful shutdown off. */
export const NO_SHUTDOWN_GRACE: ShutdownSettings = { gracePeriodSeconds: 0, criticalPodsGracePeriodSeconds: 0, byPodPriority: [] };

/** The priority of `system-cluster-critical` (scheduling.SystemCriticalPriority). */
export const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;

/** Settings the kubelet refuses, with its reason. */
export class InvalidShutdownSettingsError extends Error {
  override readonly name = 'InvalidShutdownSettingsError';
}

/** The kubelet's validation of the three fields. @throws InvalidShutdownSettingsError */
export function validateShutdownSettings(settings: ShutdownSettings): void {
  const { gracePeriodSeconds: total, criticalPodsGracePeriodSeconds: critical } = settings;
  if (critical > total) throw new InvalidShutdownSettingsError(`shutdownGracePeriodCriticalPods ${critical}s must be <= shutdownGracePeriod ${total}s`);
  if (settings.byPodPriority.length > 0 && (total > 0 || critical > 0)) {
    throw new InvalidShutdownSettingsError('cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time');
  }
}

/** The groups in ascending priority; empty when graceful shutdown is off. */
export function shutdownGroups(settings: ShutdownSettings): ShutdownGroupPeriod[] {
  if (settings.byPodPriority.length > 0) return [...settings.byPodPriority].sort((a, b) => a.priority - b.priority);
  const total = settings.gracePeriodSeconds;
  if (total === 0) return [];
  const regular = total - settings.criticalPodsGracePeriodSeconds;
  if (regular < 0) return [];
  return [
    { priority: 0, shutdownGracePeriodSeconds: regular },
    { priority: SYSTEM_CRITICAL_PRIORITY, shutdownGracePeriodSeconds: total - regular },
  ];
}

/** How long logind must hold the host: every group's period, one after the other. */
export function periodRequestedSeconds(groups: readonly ShutdownGroupPeriod[]): number {
  return groups.reduce((sum, group) => sum + group.shutdownGracePeriodSeconds, 0);
}

/** A group with its pods. */
export interface PodShutdownGroup extends ShutdownGroupPeriod {
  readonly pods: readonly V1Pod[];
}

/** The index of the group a priority falls in (`groups` ascending, not empty; of equal ones, the first). */
function groupIndexOf(groups: readonly ShutdownGroupPeriod[], priority: number): number {
  let index = 0;
  groups.forEach((group, i) => {
    if (group.priority <= priority && group.priority !== groups[index]?.priority) index = i;
  });
  return index;
}

/** Every group, in order, with the pods that fall in it (groups without pods included). */
export function groupPodsByPriority(groups: readonly ShutdownGroupPeriod[], pods: readonly V1Pod[]): PodShutdownGroup[] {
  const members: V1Pod[][] = groups.map(() => []);
  if (groups.length === 0) return [];
  for (const pod of pods) members[groupIndexOf(groups, pod.spec?.priority ?? 0)]?.push(pod);
  return groups.map((group, i) => ({ ...group, pods: members[i] ?? [] }));
}

/** The grace period a pod gets in its group: the group's, or the pod's own when shorter. */
export function podShutdownGraceSeconds(group: ShutdownGroupPeriod, pod: V1Pod): number {
  const own = pod.spec?.terminationGracePeriodSeconds;
  return own !== undefined && own <= group.shutdownGracePeriodSeconds ? own : group.shutdownGracePeriodSeconds;
}
