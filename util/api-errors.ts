/**
 * Typed checks on failed Kubernetes API calls. The agent's API client (`kube/`) throws
 * {@link KubeApiError}: the HTTP status in `.code` and the response body (a `Status` object, parsed
 * when it is JSON) in `.body`. Errors of the same shape (client-node's `ApiException`, used by the
 * tests) and watch failures carrying `statusCode` are read the same way. These predicates read those
 * fields, never the message text.
 */

/** The API server answered a request with a status outside 2xx. */
export class KubeApiError extends Error {
  override readonly name = 'KubeApiError';

  constructor(
    /** The HTTP status. */
    readonly code: number,
    /** The response body: the parsed `Status` object when it was JSON, else its text. */
    readonly body: unknown,
    /** What was asked, for logs: method and path. */
    readonly request: string,
  ) {
    super(`${request}: HTTP ${code}${reasonSuffix(body)}`);
  }
}

function reasonSuffix(body: unknown): string {
  if (typeof body !== 'object' || body === null) return '';
  const message = 'message' in body && typeof body.message === 'string' ? body.message : undefined;
  return message === undefined ? '' : ` (${message})`;
}

/** An Error with a numeric `code` and a `body`: a {@link KubeApiError} or client-node's `ApiException`. */
function isApiStatusError(err: unknown): err is Error & { code: number; body: unknown } {
  return err instanceof Error && 'code' in err && typeof err.code === 'number' && 'body' in err;
}

/** HTTP status of a failed API call or watch, undefined for network-level failures. */
export function apiStatusCode(err: unknown): number | undefined {
  if (isApiStatusError(err)) return err.code;
  if (typeof err === 'object' && err !== null && 'statusCode' in err && typeof err.statusCode === 'number') {
    return err.statusCode;
  }
  return undefined;
}

/** The `Status` object the API server answered with, when the body is one. */
function statusBody(err: unknown): Record<string, unknown> | undefined {
  if (!isApiStatusError(err)) return undefined;
  const body: unknown = typeof err.body === 'string' ? parseJson(err.body) : err.body;
  return typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : undefined;
}

/** The `reason` of the `Status` the API server answered with (`AlreadyExists`, `Conflict`, …). */
export function apiStatusReason(err: unknown): string | undefined {
  const reason = statusBody(err)?.reason;
  return typeof reason === 'string' ? reason : undefined;
}

/** The `message` of the `Status` the API server answered with: its own words for the failure. */
export function apiStatusMessage(err: unknown): string | undefined {
  const message = statusBody(err)?.message;
  return typeof message === 'string' && message !== '' ? message : undefined;
}

/** The fields named by the `details.causes` of the `Status` the API server answered with. */
export function apiStatusCauseFields(err: unknown): string[] {
  const details = statusBody(err)?.details;
  const causes: unknown = typeof details === 'object' && details !== null && 'causes' in details ? details.causes : undefined;
  if (!Array.isArray(causes)) return [];
  return causes.flatMap((c: unknown) => (typeof c === 'object' && c !== null && 'field' in c && typeof c.field === 'string' ? [c.field] : []));
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The `code` of a watch ERROR event's `Status` object (410: the version is too old, relist). */
export function watchErrorStatusCode(object: unknown): number | undefined {
  if (typeof object !== 'object' || object === null || !('code' in object)) return undefined;
  return typeof object.code === 'number' ? object.code : undefined;
}

/** The object does not exist (404). */
export function isNotFound(err: unknown): boolean {
  return apiStatusCode(err) === 404;
}

/** A create found the name taken (409, reason AlreadyExists). */
export function isAlreadyExists(err: unknown): boolean {
  return apiStatusCode(err) === 409 && apiStatusReason(err) === 'AlreadyExists';
}

/** An update lost an optimistic-concurrency race (409 other than AlreadyExists): re-read and retry. */
export function isConflict(err: unknown): boolean {
  return apiStatusCode(err) === 409 && apiStatusReason(err) !== 'AlreadyExists';
}

/**
 * The request was refused as invalid (422) because of `field`. A patch carrying `metadata.uid` of a
 * pod that was replaced by a new one with the same name is refused this way (the UID is immutable).
 */
export function isInvalidField(err: unknown, field: string): boolean {
  return apiStatusCode(err) === 422 && apiStatusCauseFields(err).includes(field);
}

/** The resource version asked for is too old (410): relist. */
export function isGone(err: unknown): boolean {
  return apiStatusCode(err) === 410;
}

/** The caller is authenticated but not allowed (403), e.g. NodeRestriction refusing a node. */
export function isForbidden(err: unknown): boolean {
  return apiStatusCode(err) === 403;
}

/** The caller's credentials were not accepted (401). */
export function isUnauthorized(err: unknown): boolean {
  return apiStatusCode(err) === 401;
}
