/**
 * The node-credential flags, under the kubelet's names: `--bootstrap-kubeconfig`, `--cert-dir`,
 * `--rotate-certificates`; and nodelet's `--bootstrap-from-service-account`, which takes the
 * bootstrap credential from the agent pod's bound service account token instead of a file (the
 * chart's way: the token names the node its pod runs on, which the approver checks).
 */
import path from 'node:path';
import { FlagError, type FlagSpecs } from '../util/flags.js';

export const CREDENTIAL_FLAGS = {
  'bootstrap-kubeconfig': { type: 'string', value: 'PATH', defaultText: 'none', description: "kubeconfig whose credential requests the node's client certificate (then --kubeconfig is where the node's kubeconfig is written)" },
  'bootstrap-from-service-account': { type: 'boolean', description: "request the node's client certificate with the pod's service account token (in-cluster)" },
  'cert-dir': { type: 'string', value: 'DIR', defaultText: '<root-dir>/pki', description: "directory of the node's client and serving certificates" },
  'rotate-certificates': { type: 'boolean', description: 'renew the client certificate before it expires (with --bootstrap-*)' },
} as const satisfies FlagSpecs;

interface CredentialFlagValues {
  readonly 'bootstrap-kubeconfig': string | undefined;
  readonly 'bootstrap-from-service-account'?: boolean;
  readonly 'cert-dir': string | undefined;
  readonly 'rotate-certificates'?: boolean;
  readonly 'root-dir': string;
}

/** Where the bootstrap credential comes from. */
export type BootstrapSource = { readonly kind: 'kubeconfig'; readonly path: string } | { readonly kind: 'service-account' };

/** How the agent gets its own credentials; undefined: `--kubeconfig` (or in-cluster) as given. */
export interface NodeCredentialSettings {
  readonly bootstrap: BootstrapSource;
  readonly rotate: boolean;
}

/** The directory of the node's certificates (`--cert-dir`, default `<root-dir>/pki`). */
export function certDirOf(values: CredentialFlagValues): string {
  const raw = values['cert-dir'] ?? '';
  if (raw === '') return path.join(values['root-dir'], 'pki');
  if (!path.isAbsolute(raw)) throw new FlagError(`--cert-dir must be an absolute path, got "${raw}"`);
  return raw;
}

/** @throws FlagError when both bootstrap sources are given, or rotation without a bootstrap. */
export function parseCredentialFlags(values: CredentialFlagValues): NodeCredentialSettings | undefined {
  const file = values['bootstrap-kubeconfig'] ?? '';
  const fromServiceAccount = values['bootstrap-from-service-account'] === true;
  const rotate = values['rotate-certificates'] === true;
  if (file !== '' && fromServiceAccount) throw new FlagError('--bootstrap-kubeconfig and --bootstrap-from-service-account exclude each other');
  if (file === '' && !fromServiceAccount) {
    // The kubelet rotates only certificates it requested: saying so beats a flag that does nothing.
    if (rotate) throw new FlagError('--rotate-certificates needs --bootstrap-kubeconfig or --bootstrap-from-service-account');
    return undefined;
  }
  return { bootstrap: fromServiceAccount ? { kind: 'service-account' } : { kind: 'kubeconfig', path: file }, rotate };
}
