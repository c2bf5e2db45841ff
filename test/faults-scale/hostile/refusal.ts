/**
 * The category of an API server's refusal of a create, for the run's refusal histogram: HTTP code,
 * Status reason and the first cause's field (indices and map keys folded) and type, read from the
 * Status body, never from message text.
 */
import { ApiException } from '@kubernetes/client-node';

interface StatusCause {
  readonly field?: string;
  readonly reason?: string;
}

function parse(body: unknown): Record<string, unknown> | undefined {
  if (typeof body === 'object' && body !== null) return body as Record<string, unknown>;
  if (typeof body !== 'string') return undefined;
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** `spec.containers[0].env[12].name` → `spec.containers[].env[].name`; `metadata.labels[ü]` → `metadata.labels[]`. */
export function foldField(field: string): string {
  return field.replace(/\[[^\]]*\]/g, '[]');
}

/** The refusal category of a failed create, or undefined when `err` is not an API answer (network failure, bug). */
export function refusalCategory(err: unknown): string | undefined {
  if (!(err instanceof ApiException)) return undefined;
  const status = parse(err.body);
  const reason = typeof status?.reason === 'string' ? status.reason : 'no-reason';
  const details = status?.details as { causes?: StatusCause[] } | undefined;
  const first = details?.causes?.[0];
  const cause = first === undefined ? '' : ` ${foldField(first.field ?? '')} ${first.reason ?? ''}`.trimEnd();
  return `${err.code} ${reason}${cause}`;
}
