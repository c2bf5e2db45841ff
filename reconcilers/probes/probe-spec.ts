/**
 * A container's probes as plain settings, with the API's defaults applied (the API server sets
 * them too; static pods and old objects may lack them): period 10 s, timeout 1 s, success and
 * failure thresholds 1 and 3, no initial delay.
 */
import type { V1Container, V1HTTPGetAction, V1Probe } from '@kubernetes/client-node';

export type ProbeType = 'liveness' | 'readiness' | 'startup';

/** An HTTP GET against the container, as probes and lifecycle hooks both make it. */
export interface HttpGetAction {
  readonly kind: 'httpGet';
  readonly scheme: 'HTTP' | 'HTTPS';
  /** Empty: the pod IP. */
  readonly host: string;
  readonly port: number | string;
  readonly path: string;
  readonly headers: readonly { readonly name: string; readonly value: string }[];
}

/** The API's HTTPGetAction as plain data; `defaultPath` when it names none. */
export function httpGetActionOf(h: V1HTTPGetAction, defaultPath: string): HttpGetAction {
  return {
    kind: 'httpGet',
    scheme: h.scheme === 'HTTPS' ? 'HTTPS' : 'HTTP',
    host: h.host ?? '',
    port: h.port,
    path: h.path ?? defaultPath,
    headers: (h.httpHeaders ?? []).map((x) => ({ name: x.name, value: x.value })),
  };
}

/** How a probe checks the container. */
export type ProbeAction =
  | { readonly kind: 'exec'; readonly command: readonly string[] }
  | HttpGetAction
  | { readonly kind: 'tcpSocket'; readonly host: string; readonly port: number | string }
  | { readonly kind: 'grpc'; readonly port: number; readonly service: string };

export interface ProbeSettings {
  readonly type: ProbeType;
  readonly action: ProbeAction;
  readonly initialDelayMs: number;
  readonly periodMs: number;
  readonly timeoutMs: number;
  readonly successThreshold: number;
  readonly failureThreshold: number;
  /** The probe-level grace period for a kill after a liveness or startup failure, if set. */
  readonly terminationGracePeriodSeconds?: number;
}

/** A probe with no action, or with more than one: nodelet cannot run it. */
export class InvalidProbeError extends Error {
  override readonly name = 'InvalidProbeError';
}

export function isInvalidProbeError(error: unknown): error is InvalidProbeError {
  return error instanceof InvalidProbeError;
}

function actionOf(probe: V1Probe): ProbeAction {
  const actions: ProbeAction[] = [];
  if (probe.exec !== undefined) actions.push({ kind: 'exec', command: probe.exec.command ?? [] });
  if (probe.httpGet !== undefined) actions.push(httpGetActionOf(probe.httpGet, '/'));
  if (probe.tcpSocket !== undefined) actions.push({ kind: 'tcpSocket', host: probe.tcpSocket.host ?? '', port: probe.tcpSocket.port });
  if (probe.grpc !== undefined) actions.push({ kind: 'grpc', port: probe.grpc.port, service: probe.grpc.service ?? '' });
  const [action, ...more] = actions;
  if (action === undefined || more.length > 0) throw new InvalidProbeError(`a probe must name exactly one action (exec, httpGet, tcpSocket or grpc), found ${actions.length}`);
  return action;
}

function positive(value: number | undefined, fallback: number): number {
  return value !== undefined && Number.isInteger(value) && value >= 1 ? value : fallback;
}

/** The settings of one probe of the container, or undefined when the container has none of that type. */
export function probeSettings(container: V1Container, type: ProbeType): ProbeSettings | undefined {
  const probe = type === 'liveness' ? container.livenessProbe : type === 'readiness' ? container.readinessProbe : container.startupProbe;
  if (probe === undefined) return undefined;
  const grace = probe.terminationGracePeriodSeconds;
  return {
    type,
    action: actionOf(probe),
    initialDelayMs: Math.max(0, probe.initialDelaySeconds ?? 0) * 1000,
    periodMs: positive(probe.periodSeconds, 10) * 1000,
    timeoutMs: positive(probe.timeoutSeconds, 1) * 1000,
    // Liveness and startup probes must have a success threshold of 1 (API validation).
    successThreshold: type === 'readiness' ? positive(probe.successThreshold, 1) : 1,
    failureThreshold: positive(probe.failureThreshold, 3),
    ...(type !== 'readiness' && grace !== undefined && grace >= 0 ? { terminationGracePeriodSeconds: grace } : {}),
  };
}

/** Every probe of the container, startup first. */
export function containerProbes(container: V1Container): ProbeSettings[] {
  return (['startup', 'liveness', 'readiness'] as const).flatMap((type) => {
    const settings = probeSettings(container, type);
    return settings === undefined ? [] : [settings];
  });
}
