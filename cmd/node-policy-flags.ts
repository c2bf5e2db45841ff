/**
 * The node-policy flags, under the kubelet's names and with its defaults: what is reserved from
 * pods (`--system-reserved`, `--kube-reserved`, as `cpu=100m,memory=1Gi`) and how image pulls share
 * the node (`--serialize-image-pulls`, `--max-parallel-image-pulls`, `--registry-qps`,
 * `--registry-burst`). They are the base the NodeAgent's `spec.systemReserved`, `spec.kubeReserved`
 * and `spec.imagePulls` override; the kubelet's `crashLoopBackOff.maxContainerRestartPeriod` has no
 * flag (configuration only), so its base is the kubelet's default, 5 min.
 */
import { DEFAULT_IMAGE_PULLS, reservationProblem, type ImagePullSettings, type ReservedResources } from '../controllers/nodeagent/node-policy-settings.js';
import { FlagError, type FlagSpecs } from '../util/flags.js';

export const NODE_POLICY_FLAGS = {
  'system-reserved': { type: 'string', value: 'LIST', default: '', description: 'resources held back from pods for the OS, e.g. cpu=100m,memory=500Mi,ephemeral-storage=1Gi' },
  'kube-reserved': { type: 'string', value: 'LIST', default: '', description: 'resources held back from pods for the agent and the runtime, same form' },
  'serialize-image-pulls': { type: 'string', value: 'BOOL', default: 'true', description: 'pull one image at a time' },
  'max-parallel-image-pulls': { type: 'string', value: 'N', default: '', description: 'pulls at once when not serialized (empty: no limit)' },
  'registry-qps': { type: 'string', value: 'QPS', default: String(DEFAULT_IMAGE_PULLS.registryPullQPS), description: 'image pulls started per second (0: no limit)' },
  'registry-burst': { type: 'string', value: 'N', default: String(DEFAULT_IMAGE_PULLS.registryBurst), description: 'pulls that may start at once above --registry-qps' },
} as const satisfies FlagSpecs;

interface NodePolicyFlagValues {
  readonly 'system-reserved': string;
  readonly 'kube-reserved': string;
  readonly 'serialize-image-pulls': string;
  readonly 'max-parallel-image-pulls': string;
  readonly 'registry-qps': string;
  readonly 'registry-burst': string;
}

/** `cpu=100m,memory=1Gi` → a reservation. @throws FlagError on a bad pair, resource or quantity. */
export function parseReservedFlag(flag: string, raw: string): ReservedResources {
  const reserved: Record<string, string> = {};
  for (const pair of raw.split(',').map((p) => p.trim()).filter((p) => p !== '')) {
    const [name, quantity, extra] = pair.split('=');
    if (name === undefined || quantity === undefined || extra !== undefined || name === '' || quantity === '') {
      throw new FlagError(`--${flag} must be a list of resource=quantity, got "${pair}"`);
    }
    reserved[name] = quantity;
  }
  const problem = reservationProblem(reserved);
  if (problem !== undefined) throw new FlagError(`--${flag}: ${problem}`);
  return reserved;
}

function wholeNumber(flag: string, raw: string, min: number): number {
  if (!/^\d+$/.test(raw) || Number(raw) < min) throw new FlagError(`--${flag} must be an integer of at least ${min}, got "${raw}"`);
  return Number(raw);
}

/** The image pull flags. @throws FlagError on a bad value, or a parallel limit other than 1 with serialized pulls (the kubelet refuses it). */
export function parseImagePullFlags(values: NodePolicyFlagValues): ImagePullSettings {
  const serialize = values['serialize-image-pulls'];
  if (serialize !== 'true' && serialize !== 'false') throw new FlagError(`--serialize-image-pulls must be true or false, got "${serialize}"`);
  const parallelRaw = values['max-parallel-image-pulls'];
  const maxParallelImagePulls = parallelRaw === '' ? null : wholeNumber('max-parallel-image-pulls', parallelRaw, 1);
  if (serialize === 'true' && maxParallelImagePulls !== null && maxParallelImagePulls !== 1) {
    throw new FlagError(`--max-parallel-image-pulls=${maxParallelImagePulls} needs --serialize-image-pulls=false`);
  }
  const qps = values['registry-qps'];
  if (!/^\d+(\.\d+)?$/.test(qps)) throw new FlagError(`--registry-qps must be a number of at least 0, got "${qps}"`);
  return { serializeImagePulls: serialize === 'true', maxParallelImagePulls, registryPullQPS: Number(qps), registryBurst: wholeNumber('registry-burst', values['registry-burst'], 0) };
}
