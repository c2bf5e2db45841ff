/**
 * Registry credentials for a pod's image pulls, from its `spec.imagePullSecrets`, as the kubelet
 * finds them (`getPullSecretsForPod` in kubelet_pods.go, `MakeDockerKeyring` in
 * credentialprovider/secrets): every referenced secret of type `kubernetes.io/dockerconfigjson`
 * (key `.dockerconfigjson`) or legacy `kubernetes.io/dockercfg` (key `.dockercfg`) goes into one
 * keyring, and the keyring's matches for the image are tried in order (see docker-keyring.ts).
 *
 * A secret that cannot be used (missing, unreadable, of another type, malformed) is skipped: the
 * pull goes on with the others, or anonymously, and the pod gets a `FailedToRetrieveImagePullSecret`
 * warning. The kubelet does the same for a missing secret; for a malformed one it fails the pull,
 * where nodelet pulls without it (the registry's refusal then says what is wrong).
 *
 * Secrets are read from the API on every pull: pulls are rare next to the cost of watching every
 * secret a pod names.
 */
import type { V1LocalObjectReference, V1Pod, V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { AuthConfig } from '../../cri/types.js';
import { DockerKeyring, isDockerConfigError, parseDockerConfigJson, parseDockercfg, type RegistryCredential } from './docker-keyring.js';
import type { EventRecorder } from '../events/event-recorder.js';
import type { PodPullCredentials, PullCredentials } from './image-puller.js';
import { parseImageReference } from './image-reference.js';

export const DOCKER_CONFIG_JSON_SECRET_TYPE = 'kubernetes.io/dockerconfigjson';
export const DOCKERCFG_SECRET_TYPE = 'kubernetes.io/dockercfg';

/** Where {@link createPullCredentials} reads secrets and reports the ones it cannot use. */
export interface PullCredentialsOptions {
  /** @returns the secret (`data` base64-encoded, as the API serves it), or `undefined` when it does not exist. */
  readonly readSecret: (namespace: string, name: string) => Promise<V1Secret | undefined>;
  /** Receives a `FailedToRetrieveImagePullSecret` warning per pull that had to skip secrets. */
  readonly events?: EventRecorder;
  readonly logger?: Logger;
}

/** A referenced secret that contributes nothing, and why. */
interface UnusableSecret {
  readonly name: string;
  readonly problem: string;
}

type SecretEntries = readonly (readonly [string, RegistryCredential])[];

/** The docker config entries of one secret; throws `DockerConfigError` for a malformed one. */
function secretEntries(secret: V1Secret): SecretEntries | string {
  const data = secret.data ?? {};
  const decode = (key: string): string | undefined => {
    const value = data[key];
    return value === undefined || value === '' ? undefined : Buffer.from(value, 'base64').toString('utf8');
  };
  if (secret.type === DOCKER_CONFIG_JSON_SECRET_TYPE) {
    const text = decode('.dockerconfigjson');
    return text === undefined ? 'has no .dockerconfigjson' : parseDockerConfigJson(text);
  }
  if (secret.type === DOCKERCFG_SECRET_TYPE) {
    const text = decode('.dockercfg');
    return text === undefined ? 'has no .dockercfg' : parseDockercfg(text);
  }
  return `is of type ${secret.type ?? 'Opaque'}, not ${DOCKER_CONFIG_JSON_SECRET_TYPE} or ${DOCKERCFG_SECRET_TYPE}`;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Reads one referenced secret: its entries, or the reason it is of no use. */
async function readPullSecret(
  options: PullCredentialsOptions,
  namespace: string,
  name: string,
): Promise<{ entries: SecretEntries } | UnusableSecret> {
  let secret: V1Secret | undefined;
  try {
    secret = await options.readSecret(namespace, name);
  } catch (error) {
    return { name, problem: errorText(error) };
  }
  if (secret === undefined) return { name, problem: 'not found' };
  try {
    const entries = secretEntries(secret);
    return typeof entries === 'string' ? { name, problem: entries } : { entries };
  } catch (error) {
    if (!isDockerConfigError(error)) throw error;
    return { name, problem: error.message };
  }
}

/**
 * Where the runtime may send the credentials: containerd hands them only to the host named here
 * (and ignores an address without a scheme), so it is the image's registry, and for Docker Hub the
 * host its API lives on.
 */
export function serverAddressFor(registryDomain: string): string {
  return `https://${registryDomain === 'docker.io' ? 'registry-1.docker.io' : registryDomain}`;
}

/**
 * `127.0.0.1:5000/private/busybox` from `127.0.0.1:5000/private/busybox:1.35`; Docker Hub as
 * `docker.io`: what credentials are looked up for (the kubelet's repoToPull).
 */
export function repositoryOf(image: string): { domain: string; repository: string } | undefined {
  try {
    const ref = parseImageReference(image);
    const domain = ref.domain === 'index.docker.io' ? 'docker.io' : ref.domain;
    return { domain, repository: `${domain}/${ref.path}` };
  } catch {
    // The image puller refuses an unparseable reference before it asks for credentials.
    return undefined;
  }
}

/** Registry credentials as the runtime takes them: each for the registry's API host ({@link serverAddressFor}). */
export function authConfigsFor(registryDomain: string, credentials: readonly RegistryCredential[]): AuthConfig[] {
  const serverAddress = serverAddressFor(registryDomain);
  return credentials.map((credential) => ({ ...credential, serverAddress }));
}

function referencedNames(refs: readonly V1LocalObjectReference[]): string[] {
  return [...new Set(refs.map((ref) => ref.name ?? '').filter((name) => name !== ''))];
}

function reportUnusable(options: PullCredentialsOptions, pod: V1Pod, unusable: readonly UnusableSecret[]): void {
  const list = unusable.map((s) => (s.problem === 'not found' ? s.name : `${s.name}: ${s.problem}`)).join(', ');
  const message = `Unable to retrieve some image pull secrets (${list}); attempting to pull the image may not succeed.`;
  options.logger?.warn({ pod: `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`, secrets: unusable }, 'skipping image pull secrets');
  options.events?.record(pod, { type: 'Warning', reason: 'FailedToRetrieveImagePullSecret', message });
}

/**
 * Credentials for the images of pods, from their image pull secrets. Secrets that cannot be used
 * are skipped; the answer's `reportUnusable` names them in a `FailedToRetrieveImagePullSecret`
 * warning, which the kubelet (since 1.37) records only when a pull then failed.
 */
export function createPullCredentials(options: PullCredentialsOptions): PullCredentials {
  return async (pod: V1Pod, image: string): Promise<PodPullCredentials> => {
    const names = referencedNames(pod.spec?.imagePullSecrets ?? []);
    const target = repositoryOf(image);
    if (names.length === 0 || target === undefined) return { auths: [] };
    const namespace = pod.metadata?.namespace ?? 'default';
    const results = await Promise.all(names.map((name) => readPullSecret(options, namespace, name)));
    const keyring = new DockerKeyring();
    const unusable: UnusableSecret[] = [];
    for (const result of results) {
      if ('entries' in result) keyring.add(result.entries);
      else unusable.push(result);
    }
    const auths = authConfigsFor(target.domain, keyring.lookup(target.repository));
    return unusable.length === 0 ? { auths } : { auths, reportUnusable: () => { reportUnusable(options, pod, unusable); } };
  };
}
