/**
 * Image references as the kubelet accepts them (docker/distribution's reference grammar, the
 * subset that matters): `[registry[:port]/]path[:tag][@digest]`, lower-case path components.
 * A reference that does not parse is `InvalidImageName` before anything is pulled.
 */
const COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const DOMAIN = '(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?|\\[[0-9a-fA-F:]+\\](?::[0-9]+)?';
const TAG = '[\\w][\\w.-]{0,127}';
const DIGEST = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}';
const REFERENCE = new RegExp(`^(?:(${DOMAIN})/)?(${COMPONENT}(?:/${COMPONENT})*)(?::(${TAG}))?(?:@(${DIGEST}))?$`);

export interface ImageReference {
  /** e.g. `docker.io` (the default when the reference names none). */
  readonly domain: string;
  /** e.g. `library/busybox`. */
  readonly path: string;
  readonly tag: string | undefined;
  readonly digest: string | undefined;
}

/** Thrown for a reference that does not parse. */
export class InvalidImageReferenceError extends Error {
  constructor(readonly reference: string) {
    super(`Failed to apply default image tag "${reference}": couldn't parse image name "${reference}": invalid reference format`);
    this.name = 'InvalidImageReferenceError';
  }
}

function looksLikeDomain(first: string): boolean {
  return first.includes('.') || first.includes(':') || first === 'localhost' || first !== first.toLowerCase();
}

/** Parses and normalises a reference (`busybox` → docker.io/library/busybox). */
export function parseImageReference(reference: string): ImageReference {
  const match = REFERENCE.exec(reference);
  if (match === null || reference.length > 255) throw new InvalidImageReferenceError(reference);
  const [, rawDomain, rawPath = '', tag, digest] = match;
  let domain = rawDomain;
  let path = rawPath;
  if (domain !== undefined && !looksLikeDomain(domain)) {
    path = `${domain}/${path}`;
    domain = undefined;
  }
  domain ??= 'docker.io';
  if (domain === 'docker.io' && !path.includes('/')) path = `library/${path}`;
  return { domain, path, tag, digest };
}

/** The fully qualified reference with the `latest` tag applied when it names neither tag nor digest. */
export function normalizeImageReference(reference: string): string {
  const ref = parseImageReference(reference);
  const tag = ref.tag ?? (ref.digest === undefined ? 'latest' : undefined);
  return `${ref.domain}/${ref.path}${tag === undefined ? '' : `:${tag}`}${ref.digest === undefined ? '' : `@${ref.digest}`}`;
}
