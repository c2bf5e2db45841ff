/**
 * The kubelet's registration flags, in the kubelet's syntax: `--register-with-taints` and
 * `--node-labels`. They matter when nodelet runs alongside a kubelet (the Helm chart's default):
 * its own Node must carry a taint so ordinary pods stay off it, and a label so it can be found
 * (`kubectl get nodes -l nodelet.dev/agent`) and so the chart's DaemonSet never lands on it.
 */
import type { V1Taint } from '@kubernetes/client-node';
import { forbiddenNodeLabels } from '../controllers/node/labels.js';
import { FlagError } from '../util/flags.js';

/** A registration flag value that does not parse (a {@link FlagError}); the message names the flag and the offending part. */
export class RegistrationFlagError extends FlagError {
  override readonly name: string = 'RegistrationFlagError';
}

/** True when `err` is a {@link RegistrationFlagError}. */
export function isRegistrationFlagError(err: unknown): err is RegistrationFlagError {
  return err instanceof RegistrationFlagError;
}

const TAINT_EFFECTS = new Set(['NoSchedule', 'PreferNoSchedule', 'NoExecute']);
// A qualified name (optional DNS-subdomain prefix, then a name of at most 63 characters), as the
// API server validates label and taint keys; checked here so a typo fails before registration.
const QUALIFIED_NAME = /^(?:[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
// A label value: empty, or at most 63 characters, alphanumeric at both ends.
const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

function items(raw: string): string[] {
  return raw
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

function checkKey(flag: string, key: string): void {
  if (!QUALIFIED_NAME.test(key)) throw new RegistrationFlagError(`--${flag}: "${key}" is not a valid key`);
}

function checkValue(flag: string, value: string): void {
  if (!LABEL_VALUE.test(value)) throw new RegistrationFlagError(`--${flag}: "${value}" is not a valid value`);
}

/** One `key[=value]:Effect`. */
function parseTaint(item: string): V1Taint {
  const colon = item.lastIndexOf(':');
  if (colon < 0) throw new RegistrationFlagError(`--register-with-taints: "${item}" has no effect (key=value:Effect)`);
  const effect = item.slice(colon + 1);
  if (!TAINT_EFFECTS.has(effect)) {
    throw new RegistrationFlagError(`--register-with-taints: effect "${effect}" of "${item}" is not one of ${[...TAINT_EFFECTS].join('|')}`);
  }
  const keyValue = item.slice(0, colon);
  const eq = keyValue.indexOf('=');
  const key = eq < 0 ? keyValue : keyValue.slice(0, eq);
  checkKey('register-with-taints', key);
  if (eq < 0) return { key, effect };
  const value = keyValue.slice(eq + 1);
  checkValue('register-with-taints', value);
  return { key, value, effect };
}

/**
 * Parses `--register-with-taints`: a comma-separated list of `key=value:Effect` or `key:Effect`.
 * @throws RegistrationFlagError on a malformed item or an unknown effect.
 */
export function parseTaints(raw: string): V1Taint[] {
  const taints = items(raw).map(parseTaint);
  const seen = new Set<string>();
  for (const taint of taints) {
    const id = `${taint.key}:${taint.effect}`;
    if (seen.has(id)) throw new RegistrationFlagError(`--register-with-taints: ${id} is given twice`);
    seen.add(id);
  }
  return taints;
}

/**
 * Parses `--node-labels`: a comma-separated list of `key=value`. Keys a node may not set on itself
 * under NodeRestriction (e.g. `node-role.kubernetes.io/*`) are refused here, before anything starts.
 * @throws RegistrationFlagError on a malformed item, a repeated key or a forbidden key.
 */
export function parseNodeLabels(raw: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const item of items(raw)) {
    const eq = item.indexOf('=');
    if (eq < 0) throw new RegistrationFlagError(`--node-labels: "${item}" is not key=value`);
    const key = item.slice(0, eq);
    const value = item.slice(eq + 1);
    checkKey('node-labels', key);
    checkValue('node-labels', value);
    if (key in labels) throw new RegistrationFlagError(`--node-labels: ${key} is given twice`);
    labels[key] = value;
  }
  const forbidden = forbiddenNodeLabels(labels);
  if (forbidden.length > 0) throw new RegistrationFlagError(`--node-labels: a node may not set these labels on itself: ${forbidden.join(', ')}`);
  return labels;
}
