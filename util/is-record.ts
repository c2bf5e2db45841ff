/** Narrowing parsed JSON or YAML (`unknown`) to an object whose fields can be read. */

/** True for a plain object: not null, not an array. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
