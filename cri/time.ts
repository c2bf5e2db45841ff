/**
 * The CRI reports times as nanoseconds since the epoch (`bigint` in `types.ts`); the rest of
 * nodelet (pod status, API objects) works in `Date`. These helpers convert between the two.
 */

const NANOS_PER_MILLI = 1_000_000n;

/** Nanoseconds since the epoch → `Date` (sub-millisecond precision is dropped). */
export function nanosToDate(nanos: bigint): Date {
  return new Date(Number(nanos / NANOS_PER_MILLI));
}

/**
 * Like `nanosToDate`, but the runtime's "not applicable" value 0 (e.g. `startedAt` of a container
 * that never started) becomes `undefined` instead of 1970.
 */
export function nanosToOptionalDate(nanos: bigint): Date | undefined {
  return nanos <= 0n ? undefined : nanosToDate(nanos);
}

/** `Date` → nanoseconds since the epoch. */
export function dateToNanos(date: Date): bigint {
  return BigInt(date.getTime()) * NANOS_PER_MILLI;
}
