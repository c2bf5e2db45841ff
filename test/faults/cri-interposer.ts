/**
 * A CRI interposer for fault tests: a gRPC server on its own unix socket that forwards every unary
 * call of `runtime.v1.RuntimeService` and `runtime.v1.ImageService` to the real runtime socket, as
 * raw bytes (nothing is decoded on the way, so what the agent sends is exactly what the runtime
 * gets), and fires a one-shot trigger at an exact step of the agent's work:
 *
 *   agent ──► interposer socket ──► [trigger: method M, request mentions X] ──► containerd
 *                                       │
 *                     phase 'returned': the runtime answered; fire (e.g. SIGKILL the agent)
 *                                       before the answer is passed on
 *                     phase 'in-flight': the runtime has the call and has not answered after
 *                                       `inFlightDelayMs`; fire while it is still working
 *
 * When the agent's side of a call goes away (the agent died), the forwarded call is cancelled too,
 * as the runtime would see it if the agent had been connected directly.
 *
 * The interposer also remembers the IDs the runtime returned to RunPodSandbox and CreateContainer,
 * with the request that created them, so a trigger on a call that carries only an ID
 * (StartContainer, StopContainer, StopPodSandbox) can still be aimed at one pod's container.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Metadata, Server, ServerCredentials, credentials } from '@grpc/grpc-js';
import type { ClientUnaryCall, ServerUnaryCall, ServiceError, sendUnaryData } from '@grpc/grpc-js';
import { criMethod, criService, type CriServiceName } from '../../cri/proto.js';

const SERVICES: readonly CriServiceName[] = ['RuntimeService', 'ImageService'];
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
const MESSAGE_LIMITS = { 'grpc.max_receive_message_length': MAX_MESSAGE_BYTES, 'grpc.max_send_message_length': MAX_MESSAGE_BYTES };

/** Calls whose response names the object they created, and the response field that holds its ID. */
const CREATED_ID_FIELD: Readonly<Record<string, string>> = { RunPodSandbox: 'podSandboxId', CreateContainer: 'containerId' };

const identity = (bytes: Buffer): Buffer => bytes;

/** One call as a trigger sees it. */
export interface InterposedCall {
  /** The method name (`RunPodSandbox`, `StopContainer`, `PullImage`…). */
  readonly method: string;
  /** The request exactly as the agent serialized it. */
  readonly request: Buffer;
  /** True when every needle occurs in the request bytes (names, UIDs, IDs are plain strings on the wire). */
  mentions(...needles: readonly string[]): boolean;
}

export type TriggerPhase = 'returned' | 'in-flight';

/** A one-shot trigger: the first call that matches fires it, and it is disarmed. */
export interface Trigger {
  readonly match: (call: InterposedCall) => boolean;
  readonly phase: TriggerPhase;
  /** For 'in-flight': how long after forwarding the call to fire, if the runtime has not answered by then. */
  readonly inFlightDelayMs?: number;
  /** What to do at that moment; awaited before the runtime's answer is passed on. */
  readonly fire: (call: InterposedCall) => Promise<void>;
}

/** What happened when the trigger fired. */
export interface Firing {
  readonly method: string;
  readonly phase: TriggerPhase;
  readonly atMs: number;
  /** For 'in-flight': the runtime had not answered yet when the trigger fired. */
  readonly runtimeStillWorking: boolean;
}

/** An object the runtime created through the interposer, with the request that created it. */
export interface CreatedObject {
  readonly method: string;
  readonly id: string;
  readonly request: Buffer;
}

function describeCall(method: string, request: Buffer): InterposedCall {
  return {
    method,
    request,
    mentions: (...needles) => needles.every((needle) => needle !== '' && request.includes(needle, 0, 'utf8')),
  };
}

function upstreamTarget(endpoint: string): string {
  if (!endpoint.startsWith('unix:///')) throw new TypeError(`the interposer forwards to unix:///… endpoints only, got "${endpoint}"`);
  return endpoint;
}

export class CriInterposer {
  /** Every object created through the interposer, oldest first. */
  readonly created: CreatedObject[] = [];
  /** Method names of every call forwarded, oldest first (for diagnostics). */
  readonly calls: string[] = [];
  private trigger: Trigger | undefined;
  private firing: Firing | undefined;
  private firingError: Error | undefined;

  private constructor(
    private readonly server: Server,
    private readonly upstream: Client,
    private readonly dir: string,
  ) {}

  /** Starts an interposer in front of `upstreamEndpoint` (`unix:///…`) on a fresh socket. */
  static async start(upstreamEndpoint: string): Promise<CriInterposer> {
    const dir = await mkdtemp(path.join(tmpdir(), 'nodelet-interposer-'));
    const server = new Server(MESSAGE_LIMITS);
    const upstream = new Client(upstreamTarget(upstreamEndpoint), credentials.createInsecure(), MESSAGE_LIMITS);
    const interposer = new CriInterposer(server, upstream, dir);
    for (const service of SERVICES) {
      for (const method of Object.keys(criService(service))) interposer.register(service, method);
    }
    await new Promise<void>((resolve, reject) => {
      server.bindAsync(`unix://${interposer.socketPath}`, ServerCredentials.createInsecure(), (error) => {
        if (error === null) resolve();
        else reject(error);
      });
    });
    return interposer;
  }

  get socketPath(): string {
    return path.join(this.dir, 'cri.sock');
  }

  /** `unix:///…/cri.sock`, for the agent's `--cri-endpoint`. */
  get endpoint(): string {
    return `unix://${this.socketPath}`;
  }

  /** Arms a one-shot trigger (replacing any armed one). */
  arm(trigger: Trigger): void {
    this.trigger = trigger;
    this.firing = undefined;
    this.firingError = undefined;
  }

  disarm(): void {
    this.trigger = undefined;
  }

  /** The last firing of the armed trigger; rethrows what its `fire` threw. */
  fired(): Firing | undefined {
    if (this.firingError !== undefined) throw this.firingError;
    return this.firing;
  }

  /** IDs the runtime returned to `method` for requests that mention every needle. */
  idsCreated(method: string, ...needles: readonly string[]): string[] {
    return this.created.filter((c) => c.method === method && describeCall(c.method, c.request).mentions(...needles)).map((c) => c.id);
  }

  async close(): Promise<void> {
    this.disarm();
    this.upstream.close();
    await new Promise<void>((resolve) => {
      this.server.tryShutdown(() => {
        resolve();
      });
    });
    this.server.forceShutdown();
    await rm(this.dir, { recursive: true, force: true });
  }

  private register(service: CriServiceName, method: string): void {
    const definition = criMethod(service, method);
    const handler = (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>): void => {
      this.forward({ service, method, path: definition.path, call, callback });
    };
    this.server.register(definition.path, handler, identity, identity, 'unary');
  }

  /** Takes the armed trigger if this call matches it (one-shot). */
  private take(call: InterposedCall): Trigger | undefined {
    const trigger = this.trigger;
    if (!trigger?.match(call)) return undefined;
    this.trigger = undefined;
    return trigger;
  }

  private async fire(trigger: Trigger, call: InterposedCall, runtimeStillWorking: boolean): Promise<void> {
    this.firing = { method: call.method, phase: trigger.phase, atMs: Date.now(), runtimeStillWorking };
    try {
      await trigger.fire(call);
    } catch (error) {
      this.firingError = error instanceof Error ? error : new Error('the trigger failed', { cause: error });
    }
  }

  private forward(f: { service: CriServiceName; method: string; path: string; call: ServerUnaryCall<Buffer, Buffer>; callback: sendUnaryData<Buffer> }): void {
    this.calls.push(f.method);
    const described = describeCall(f.method, f.call.request);
    const trigger = this.take(described);
    let answered = false;
    const upstreamCall: ClientUnaryCall = this.upstream.makeUnaryRequest(
      f.path,
      identity,
      identity,
      f.call.request,
      // CRI carries nothing in metadata; the agent's own headers (user agent…) are not forwarded.
      new Metadata(),
      { deadline: f.call.getDeadline() },
      (error: ServiceError | null, response?: Buffer) => {
        answered = true;
        this.remember(f, response);
        const reply = (): void => {
          if (error !== null) f.callback({ code: error.code, details: error.details, metadata: error.metadata });
          else f.callback(null, response ?? Buffer.alloc(0));
        };
        if (trigger?.phase === 'returned') void this.fire(trigger, described, false).then(reply);
        else reply();
      },
    );
    // The agent went away (killed): the runtime sees its call cancelled, as over a direct connection.
    f.call.on('cancelled', () => {
      upstreamCall.cancel();
    });
    if (trigger?.phase === 'in-flight') {
      setTimeout(() => {
        void this.fire(trigger, described, !answered);
      }, trigger.inFlightDelayMs ?? 0);
    }
  }

  private remember(f: { service: CriServiceName; method: string; call: ServerUnaryCall<Buffer, Buffer> }, response: Buffer | undefined): void {
    const field = CREATED_ID_FIELD[f.method];
    if (field === undefined || response === undefined) return;
    const decoded = criMethod(f.service, f.method).responseDeserialize(response) as Record<string, unknown>;
    const id = decoded[field];
    if (typeof id === 'string' && id !== '') this.created.push({ method: f.method, id, request: f.call.request });
  }
}
