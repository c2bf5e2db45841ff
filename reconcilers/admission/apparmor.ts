/**
 * The kubelet's AppArmor admission (`NewAppArmorAdmitHandler`): a Pending pod that asks for an
 * AppArmor profile other than Unconfined (field or legacy annotation, pod or any container) is
 * rejected with reason `AppArmor` when the host cannot enforce AppArmor, rather than started
 * unconfined. The host is checked once, at agent start-up, as the kubelet does.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { APPARMOR_ANNOTATION_PREFIX, appArmorSpecOf } from '../container/security-context.js';
import { ADMITTED, type AdmitResult, type PodAdmitHandler } from './admit.js';

export const APPARMOR_REASON = 'AppArmor';

/** Whether the host enforces AppArmor, and if not, why (the kubelet's words). */
export type AppArmorHost = { readonly enabled: true } | { readonly enabled: false; readonly error: string };

export const APPARMOR_NOT_ENABLED = 'AppArmor is not enabled on the host';

function allContainers(pod: V1Pod): V1Container[] {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? []), ...((pod.spec?.ephemeralContainers ?? []) as V1Container[])];
}

/** The kubelet's `isRequired`: some profile other than Unconfined is asked for. */
export function appArmorRequired(pod: V1Pod): boolean {
  const podProfile = pod.spec?.securityContext?.appArmorProfile;
  if (podProfile !== undefined && podProfile.type !== 'Unconfined') return true;
  if (allContainers(pod).some((c) => c.securityContext?.appArmorProfile !== undefined && c.securityContext.appArmorProfile.type !== 'Unconfined')) return true;
  // As the kubelet: the first legacy annotation found decides.
  const annotation = Object.entries(pod.metadata?.annotations ?? {}).find(([key]) => key.startsWith(APPARMOR_ANNOTATION_PREFIX));
  return annotation !== undefined && annotation[1] !== 'unconfined';
}

/** The kubelet's `Validate`: why the pod's profiles cannot be enforced, or undefined. */
export function appArmorRefusal(pod: V1Pod, host: AppArmorHost): string | undefined {
  if (!appArmorRequired(pod)) return undefined;
  if (!host.enabled) return host.error;
  for (const container of allContainers(pod)) {
    const profile = appArmorSpecOf(pod, container);
    if (profile?.type === 'Localhost' && (profile.localhostProfile ?? '').trim() === '') {
      return `invalid empty AppArmor profile name: ${JSON.stringify(profile)}`;
    }
  }
  return undefined;
}

export function appArmorAdmitHandler(host: AppArmorHost): PodAdmitHandler {
  return {
    name: 'apparmor',
    admit: ({ pod }): AdmitResult => {
      // A pod that already runs (an agent restart) is not checked again.
      if ((pod.status?.phase ?? 'Pending') !== 'Pending') return ADMITTED;
      const refusal = appArmorRefusal(pod, host);
      return refusal === undefined ? ADMITTED : { admit: false, reason: APPARMOR_REASON, message: `Cannot enforce AppArmor: ${refusal}` };
    },
  };
}
