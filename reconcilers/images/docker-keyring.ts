/**
 * Registry credentials keyed the way docker config files key them, looked up for an image the way
 * the kubelet's credential keyring does (`pkg/credentialprovider/keyring.go`):
 *
 * - a key may carry a scheme and a path: `https://registry.example.com/v2/` is the host alone
 *   (`/v1/` and `/v2/` are API prefixes, not repository paths); `quay.io/team` is a path prefix;
 * - a key matches an image when the ports are equal, the host names have as many dot-separated
 *   labels and each label matches as a glob (`*.example.com` matches `eu.example.com`, not
 *   `example.com` nor `a.b.example.com`), and the key's path is a prefix of the image's path;
 * - every matching key contributes its credentials, most specific key first (keys are tried in
 *   reverse lexical order, so `quay.io/team` comes before `quay.io`);
 * - when no key matches a Docker Hub image, the credentials stored for `index.docker.io`
 *   (written as `https://index.docker.io/v1/` by `docker login`) apply.
 *
 * Pure: plain data in, plain data out.
 */
import { isRecord } from '../../util/is-record.js';

/** One user name and password from a docker config entry (`auth` decoded). */
export interface RegistryCredential {
  readonly username: string;
  readonly password: string;
}

/** A docker config entry that cannot be used: the whole config is refused, as the kubelet does. */
export class DockerConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DockerConfigError';
  }
}

export function isDockerConfigError(error: unknown): error is DockerConfigError {
  return error instanceof DockerConfigError;
}

const DOCKER_HUB_KEY = 'index.docker.io';
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function stringField(entry: Record<string, unknown>, field: string, key: string): string {
  const value = entry[field];
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw new DockerConfigError(`entry "${key}": "${field}" is not a string`);
  return value;
}

/** `auth` is base64 of `user:password` (strict base64, as Go's decoder is). */
function decodeAuthField(auth: string, key: string): RegistryCredential {
  if (!BASE64.test(auth)) throw new DockerConfigError(`entry "${key}": "auth" is not valid base64`);
  const decoded = Buffer.from(auth, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new DockerConfigError(`entry "${key}": "auth" does not decode to user:password`);
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** One entry of a docker config: `auth` wins over `username`/`password` when present. */
function entryCredential(key: string, value: unknown): RegistryCredential {
  if (!isRecord(value)) throw new DockerConfigError(`entry "${key}" is not an object`);
  const auth = stringField(value, 'auth', key);
  if (auth !== '') return decodeAuthField(auth, key);
  return { username: stringField(value, 'username', key), password: stringField(value, 'password', key) };
}

function parseJsonObject(text: string, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new DockerConfigError(`${what} is not valid JSON`);
  }
  if (!isRecord(parsed)) throw new DockerConfigError(`${what} is not a JSON object`);
  return parsed;
}

function entriesOf(map: Record<string, unknown>): [string, RegistryCredential][] {
  return Object.entries(map).map(([key, value]) => [key, entryCredential(key, value)]);
}

/** Entries of a `.dockerconfigjson` document (`{"auths": {"<key>": {...}}}`). */
export function parseDockerConfigJson(text: string): [string, RegistryCredential][] {
  const document = parseJsonObject(text, '.dockerconfigjson');
  const auths = document.auths ?? {};
  if (!isRecord(auths)) throw new DockerConfigError('.dockerconfigjson: "auths" is not an object');
  return entriesOf(auths);
}

/** Entries of a legacy `.dockercfg` document (`{"<key>": {...}}`). */
export function parseDockercfg(text: string): [string, RegistryCredential][] {
  return entriesOf(parseJsonObject(text, '.dockercfg'));
}

interface SchemelessUrl {
  readonly host: string;
  readonly path: string;
}

/** Splits `host[:port][/path]` (a scheme, query or fragment dropped). */
function splitSchemeless(value: string): SchemelessUrl {
  const bare = value.replace(/^https?:\/\//, '').replace(/[?#].*$/, '');
  const slash = bare.indexOf('/');
  return slash < 0 ? { host: bare, path: '' } : { host: bare.slice(0, slash), path: bare.slice(slash) };
}

/** The keyring key of a config key: host plus path, with `/v1/` or `/v2/` and a bare `/` dropped. */
export function keyringKey(configKey: string): string {
  const { host, path } = splitSchemeless(configKey);
  const effective = path.startsWith('/v1/') || path.startsWith('/v2/') ? path.slice(3) : path;
  return effective === '' || effective === '/' ? host : host + effective;
}

/** Host labels and port, like Go's `net.SplitHostPort` (a host without a port has port ''). */
function hostLabelsAndPort(host: string): { labels: string[]; port: string } {
  const bracketed = /^\[([^\]]*)\]:(\d*)$/.exec(host);
  if (bracketed !== null) return { labels: (bracketed[1] ?? '').split('.'), port: bracketed[2] ?? '' };
  const colon = host.indexOf(':');
  if (colon >= 0 && colon === host.lastIndexOf(':')) {
    return { labels: host.slice(0, colon).split('.'), port: host.slice(colon + 1) };
  }
  return { labels: host.split('.'), port: '' };
}

/**
 * A glob of one host label as a regular expression: `*` any run, `[...]` a class. (`?` would be
 * a glob too, but in a key it starts a URL query, for Go's URL parser as for this one.)
 */
function labelGlob(glob: string): RegExp | undefined {
  let source = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob.charAt(i);
    if (c === '*') source += '.*';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 1);
      if (end < 0) return undefined;
      // Go's classes and JavaScript's agree on ranges and on `^` for negation.
      source += `[${glob.slice(i + 1, end)}]`;
      i = end;
    } else if (c === '\\' && i + 1 < glob.length) source += `\\${glob.charAt(++i)}`;
    else source += c.replace(/[.+^${}()|\]\\/]/g, '\\$&');
  }
  try {
    return new RegExp(`^${source}$`);
  } catch {
    return undefined;
  }
}

/** Whether keyring key `glob` matches image repository `target` (both schemeless). */
export function keyMatchesImage(glob: string, target: string): boolean {
  const key = splitSchemeless(glob);
  const image = splitSchemeless(target);
  const keyHost = hostLabelsAndPort(key.host);
  const imageHost = hostLabelsAndPort(image.host);
  if (keyHost.port !== imageHost.port || keyHost.labels.length !== imageHost.labels.length) return false;
  if (!image.path.startsWith(key.path)) return false;
  return keyHost.labels.every((label, i) => labelGlob(label)?.test(imageHost.labels[i] ?? '') === true);
}

/** Whether a repository (`docker.io/library/busybox`) is on Docker Hub. */
function isDockerHub(repository: string): boolean {
  const host = repository.split('/', 1)[0] ?? '';
  return host === 'docker.io' || host === DOCKER_HUB_KEY;
}

/** Credentials from any number of docker configs, looked up per image repository. */
export class DockerKeyring {
  private readonly byKey = new Map<string, RegistryCredential[]>();

  /** Adds the entries of one config; entries under the same key accumulate in order. */
  add(entries: readonly (readonly [string, RegistryCredential])[]): void {
    for (const [configKey, credential] of entries) {
      const key = keyringKey(configKey);
      if (key === '') continue;
      const list = this.byKey.get(key) ?? [];
      list.push(credential);
      this.byKey.set(key, list);
    }
  }

  /**
   * Credentials to try for a repository without tag or digest (`127.0.0.1:5000/private/busybox`),
   * most specific key first; empty when nothing applies (pull anonymously).
   */
  lookup(repository: string): RegistryCredential[] {
    const keys = [...this.byKey.keys()].sort().reverse();
    const matched = keys.filter((key) => keyMatchesImage(key, repository)).flatMap((key) => this.byKey.get(key) ?? []);
    if (matched.length > 0) return matched;
    return isDockerHub(repository) ? [...(this.byKey.get(DOCKER_HUB_KEY) ?? [])] : [];
  }
}
