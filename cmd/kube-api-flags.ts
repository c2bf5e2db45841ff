/**
 * `--kube-api-qps` and `--kube-api-burst` (KubeletConfiguration `kubeAPIQPS`, `kubeAPIBurst`): the
 * client-side rate limit of the agent's API requests, with the kubelet's defaults (50 and 100,
 * pkg/kubelet/apis/config/v1beta1/defaults.go) and its checks:
 * - both are int32 flags (`fs.Int32Var`): a fraction or a number past 2^31-1 is refused;
 * - neither may be negative (pkg/kubelet/apis/config/validation: "must not be a negative number");
 * - a QPS above 0 with a burst of 0 is refused: client-go's `kubernetes.NewForConfig` refuses it,
 *   so the kubelet does not start either (it only finds out when it builds its client).
 * A QPS of 0 is valid and means what it means in client-go: 5 QPS per API group-version (see
 * kube/rate-limit.ts), not "no limit".
 */
import type { ApiRateLimits } from '../kube/rate-limit.js';
import { FlagError, parseInt32, type FlagSpecs } from '../util/flags.js';

/** The kubelet's defaults. */
export const DEFAULT_KUBE_API_LIMITS: ApiRateLimits = { qps: 50, burst: 100 };

export const KUBE_API_FLAGS = {
  'kube-api-qps': { type: 'string', value: 'QPS', default: String(DEFAULT_KUBE_API_LIMITS.qps), description: 'API requests per second the agent sends (watches not counted; the Node status and Lease heartbeats not limited); 0: 5 per API group-version, as the kubelet' },
  'kube-api-burst': { type: 'string', value: 'N', default: String(DEFAULT_KUBE_API_LIMITS.burst), description: 'API requests that may go at once above --kube-api-qps' },
} as const satisfies FlagSpecs;

interface KubeApiFlagValues {
  readonly 'kube-api-qps': string;
  readonly 'kube-api-burst': string;
}

/** An int32 of at least 0, as the kubelet's flag and validation take it. */
function nonNegativeInt32(flag: string, field: string, raw: string): number {
  const value = parseInt32(raw.trim());
  if (value === undefined) throw new FlagError(`--${flag} must be a whole number (int32), got "${raw}"`);
  if (value < 0) throw new FlagError(`--${flag}: ${field} ${value} must not be a negative number`);
  return value;
}

/** The rate limit of the agent's API client. @throws FlagError as described in this file's header. */
export function parseKubeApiFlags(values: KubeApiFlagValues): ApiRateLimits {
  const qps = nonNegativeInt32('kube-api-qps', 'kubeAPIQPS', values['kube-api-qps']);
  const burst = nonNegativeInt32('kube-api-burst', 'kubeAPIBurst', values['kube-api-burst']);
  if (qps > 0 && burst === 0) throw new FlagError(`--kube-api-burst must be above 0 when --kube-api-qps is above 0 (client-go: burst is required to be greater than 0 when QPS is set to greater than 0), got --kube-api-qps=${qps} --kube-api-burst=0`);
  return { qps, burst };
}
