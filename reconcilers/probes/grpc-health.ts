/**
 * The gRPC probe: one `grpc.health.v1.Health/Check` call, as the kubelet's gRPC prober makes it.
 * The two messages are tiny (a string field, an enum field), so they are encoded by hand rather
 * than loading a .proto at run time.
 */
import { Client, credentials, Metadata, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import net from 'node:net';
import type { ProbeOutcome } from './probe-outcome.js';
import { FOLLOWED_KUBERNETES_MINOR } from '../../util/kubernetes-release.js';

const CHECK_PATH = '/grpc.health.v1.Health/Check';
const SERVING_STATUS = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'] as const;

function encodeVarint(value: number): number[] {
  const bytes: number[] = [];
  let v = value;
  while (v > 0x7f) {
    bytes.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  bytes.push(v);
  return bytes;
}

/** `HealthCheckRequest { string service = 1; }` */
export function encodeHealthCheckRequest(service: string): Buffer {
  if (service === '') return Buffer.alloc(0);
  const text = Buffer.from(service, 'utf8');
  return Buffer.concat([Buffer.from([0x0a, ...encodeVarint(text.length)]), text]);
}

function readVarint(buf: Buffer, offset: number): { value: number; next: number } {
  let value = 0;
  let factor = 1;
  let i = offset;
  for (;;) {
    const byte = buf[i];
    if (byte === undefined) throw new RangeError('truncated varint');
    value += (byte & 0x7f) * factor;
    i++;
    if ((byte & 0x80) === 0) return { value, next: i };
    factor *= 128;
  }
}

/** The `status` of a `HealthCheckResponse` (0, UNKNOWN, when absent). */
export function decodeHealthCheckResponse(buf: Buffer): number {
  let status = 0;
  let i = 0;
  while (i < buf.length) {
    const key = readVarint(buf, i);
    const field = Math.floor(key.value / 8);
    const wire = key.value % 8;
    i = key.next;
    if (wire === 0) {
      const v = readVarint(buf, i);
      if (field === 1) status = v.value;
      i = v.next;
    } else if (wire === 2) {
      const len = readVarint(buf, i);
      i = len.next + len.value;
    } else if (wire === 1) {
      i += 8;
    } else if (wire === 5) {
      i += 4;
    } else {
      throw new RangeError(`unsupported wire type ${wire}`);
    }
  }
  return status;
}

function isServiceError(e: unknown): e is ServiceError {
  return e instanceof Error && typeof (e as Partial<ServiceError>).code === 'number';
}

function failureOf(error: unknown, address: string, timeoutMs: number): ProbeOutcome {
  if (isServiceError(error) && error.code === GrpcStatus.UNIMPLEMENTED) {
    return { result: 'failure', output: `this server does not implement the grpc health protocol (grpc.health.v1.Health): ${error.details}` };
  }
  if (isServiceError(error) && error.code === GrpcStatus.DEADLINE_EXCEEDED) {
    return { result: 'failure', output: `timeout: health rpc did not complete within ${timeoutMs / 1000}s` };
  }
  const message = isServiceError(error) ? error.details : error instanceof Error ? error.message : String(error);
  return { result: 'failure', output: `timeout: failed to connect service "${address}" within ${timeoutMs / 1000}s: ${message}` };
}

/** Calls Health/Check on host:port within the timeout. Never throws. */
export function grpcHealthCheck(c: { host: string; port: number; service: string; timeoutMs: number }): Promise<ProbeOutcome> {
  const address = `${net.isIPv6(c.host) ? `[${c.host}]` : c.host}:${c.port}`;
  // The kubelet's gRPC probes name themselves as its HTTP probes do (grpc-go appends its own agent).
  const client = new Client(address, credentials.createInsecure(), { 'grpc.max_reconnect_backoff_ms': 1000, 'grpc.primary_user_agent': `kube-probe/${FOLLOWED_KUBERNETES_MINOR}` });
  return new Promise<ProbeOutcome>((resolve) => {
    client.makeUnaryRequest(
      CHECK_PATH,
      (service: string) => encodeHealthCheckRequest(service),
      (buf: Buffer) => decodeHealthCheckResponse(buf),
      c.service,
      new Metadata(),
      { deadline: Date.now() + c.timeoutMs },
      (error, status) => {
        client.close();
        if (error) {
          resolve(failureOf(error, address, c.timeoutMs));
          return;
        }
        const name = SERVING_STATUS[status ?? 0] ?? String(status);
        if (status === 1) resolve({ result: 'success', output: '' });
        else resolve({ result: 'failure', output: `service unhealthy (responded with "${name}")` });
      },
    );
  });
}
