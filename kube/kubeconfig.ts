/**
 * Where the API server is and how the agent proves who it is: read from a kubeconfig file
 * (`--kubeconfig`) or from the pod's service account (in-cluster), as client-go's `clientcmd` and
 * `rest.InClusterConfig` do. Only what a node agent is given is supported: a server URL, its CA,
 * a client certificate and key, a bearer token or token file. Credentials that need a plugin
 * (exec, auth-provider) or basic auth are refused with {@link UnsupportedKubeconfigError}.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { load as loadYaml } from 'js-yaml';

/** One source of bytes: inline, or a file read when a connection is made (so rotation is seen). */
export type Material = { readonly data: Buffer } | { readonly file: string };

/** The endpoint and credentials of one API server connection. */
export interface KubeEndpoint {
  /** `https://host:port`, without a trailing slash. */
  readonly server: string;
  readonly ca?: Material;
  readonly clientCert?: Material;
  readonly clientKey?: Material;
  /** A fixed bearer token. */
  readonly token?: string;
  /** A file holding the bearer token, re-read periodically (bound service-account tokens rotate). */
  readonly tokenFile?: string;
  readonly insecureSkipTlsVerify: boolean;
  /** The name to verify the server certificate against, when not the server's host. */
  readonly tlsServerName?: string;
}

/** The kubeconfig asks for something this client does not do (an auth plugin, basic auth, a proxy). */
export class UnsupportedKubeconfigError extends Error {
  override readonly name = 'UnsupportedKubeconfigError';
}

/** The kubeconfig is unreadable or lacks what a connection needs. */
export class InvalidKubeconfigError extends Error {
  override readonly name = 'InvalidKubeconfigError';
}

type Entries = Record<string, unknown>;

function record(value: unknown): Entries {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Entries) : {};
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The named entry of a kubeconfig list (`clusters`, `users`, `contexts`). */
function named(list: unknown, name: string, kind: string, field: string): Entries {
  const entry = Array.isArray(list) ? list.map(record).find((e) => e.name === name) : undefined;
  if (entry === undefined) throw new InvalidKubeconfigError(`kubeconfig has no ${kind} named ${JSON.stringify(name)}`);
  return record(entry[field]);
}

function material(dataField: unknown, fileField: unknown, baseDir: string): Material | undefined {
  const data = text(dataField);
  if (data !== undefined) return { data: Buffer.from(data, 'base64') };
  const file = text(fileField);
  return file === undefined ? undefined : { file: path.resolve(baseDir, file) };
}

function refuseUnsupported(user: Entries, cluster: Entries): void {
  for (const field of ['exec', 'auth-provider', 'username', 'password', 'as', 'as-groups']) {
    if (user[field] !== undefined) throw new UnsupportedKubeconfigError(`kubeconfig user field "${field}" is not supported by nodelet's API client`);
  }
  if (cluster['proxy-url'] !== undefined) throw new UnsupportedKubeconfigError('kubeconfig cluster field "proxy-url" is not supported by nodelet\'s API client');
}

/** Parses kubeconfig text (YAML or JSON); relative file paths are resolved against `baseDir`. */
export function parseKubeconfig(source: string, baseDir: string): KubeEndpoint {
  const config = record(loadYaml(source));
  const contextName = text(config['current-context']);
  if (contextName === undefined) throw new InvalidKubeconfigError('kubeconfig has no current-context');
  const context = named(config.contexts, contextName, 'context', 'context');
  const cluster = named(config.clusters, text(context.cluster) ?? '', 'cluster', 'cluster');
  const user = context.user === undefined ? {} : named(config.users, text(context.user) ?? '', 'user', 'user');
  refuseUnsupported(user, cluster);
  const server = text(cluster.server);
  if (server === undefined) throw new InvalidKubeconfigError(`kubeconfig cluster of context ${contextName} has no server`);
  const optional = <K extends keyof KubeEndpoint>(key: K, value: KubeEndpoint[K] | undefined): Partial<KubeEndpoint> => (value === undefined ? {} : { [key]: value });
  return {
    server: server.replace(/\/+$/, ''),
    insecureSkipTlsVerify: cluster['insecure-skip-tls-verify'] === true,
    ...optional('ca', material(cluster['certificate-authority-data'], cluster['certificate-authority'], baseDir)),
    ...optional('clientCert', material(user['client-certificate-data'], user['client-certificate'], baseDir)),
    ...optional('clientKey', material(user['client-key-data'], user['client-key'], baseDir)),
    ...optional('token', text(user.token)),
    ...optional('tokenFile', text(user.tokenFile) === undefined ? undefined : path.resolve(baseDir, text(user.tokenFile) ?? '')),
    ...optional('tlsServerName', text(cluster['tls-server-name'])),
  };
}

/** Reads and parses a kubeconfig file. */
export function loadKubeconfigFile(file: string): KubeEndpoint {
  let source: string;
  try {
    source = readFileSync(file, 'utf8');
  } catch (err: unknown) {
    throw new InvalidKubeconfigError(`cannot read kubeconfig ${file}`, { cause: err });
  }
  return parseKubeconfig(source, path.dirname(file));
}

/** Where a pod's service account credentials are mounted. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The in-cluster endpoint: the `kubernetes` service from the environment, the service account's CA and token. */
export function inClusterEndpoint(env: NodeJS.ProcessEnv = process.env, dir: string = SERVICE_ACCOUNT_DIR): KubeEndpoint {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (host === undefined || host === '' || port === undefined || port === '') {
    throw new InvalidKubeconfigError('not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set');
  }
  const hostPart = host.includes(':') ? `[${host}]` : host;
  return { server: `https://${hostPart}:${port}`, ca: { file: path.join(dir, 'ca.crt') }, tokenFile: path.join(dir, 'token'), insecureSkipTlsVerify: false };
}
