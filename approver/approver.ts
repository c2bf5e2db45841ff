/**
 * The nodelet CSR approver's loop: it lists and watches every CertificateSigningRequest, decides
 * each open one with {@link decideCsr} (decide.ts holds every rule), and writes an approval or a
 * denial through the `approval` subresource; requests it ignores get no write at all, so the
 * cluster's own approver or an operator still can decide them.
 *
 * - One request at a time, in a queue of names: the newest object of a name is what is decided,
 *   and a name queued twice is decided once.
 * - The verdict is written with the object as read (its resourceVersion): if the request changed
 *   meanwhile (409 Conflict), it is read again and decided again, so a verdict someone else wrote
 *   first is never overwritten or doubled.
 * - Any other failure (the API server away, a Node read failing) is logged and the request is
 *   retried with capped exponential backoff; an informer failure restarts the informer the same way.
 * - Open requests are decided again every `resyncMs`: a serving request's answer depends on its
 *   Node (its label, its addresses), which may only now be what it will be.
 * - Nothing a request holds can throw out of the loop: its fields are read defensively and its PEM
 *   parse failure is a fact to decide on (kube/certificates/csr-parse.ts).
 */
import type { V1CertificateSigningRequest, V1CertificateSigningRequestList, V1Node } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { InvalidCsrError, parseCsrPem, type ParsedCsr } from '../kube/certificates/csr-parse.js';
import { segment, type KubeClient } from '../kube/client.js';
import { ListWatchInformer } from '../kube/informer.js';
import { InformerRestarts } from '../kube/informer-restarts.js';
import { isConflict, isNotFound } from '../util/api-errors.js';
import { backoffDelay, type BackoffPolicy } from '../util/backoff.js';
import { systemClock, type Clock, type TimerHandle } from '../util/clock.js';
import {
  AGENT_NODE_LABEL,
  decideCsr,
  isFinished,
  nodeToRead,
  type ApproverPolicy,
  type CsrDecision,
  type CsrRequestFacts,
  type CsrStatusFacts,
  type NodeFacts,
} from './decide.js';

/** The collection of CertificateSigningRequests. */
export const CSR_PATH = '/apis/certificates.k8s.io/v1/certificatesigningrequests';

/** What the approver is built from. */
export interface CsrApproverOptions {
  /** Needs list/watch/get on certificatesigningrequests, update on their approval, get on nodes. */
  readonly kube: KubeClient;
  readonly policy: ApproverPolicy;
  readonly logger: Logger;
  readonly clock?: Clock;
  /** Retry delays after failures (per request, and of the informer); default 1 s doubling to 5 min. */
  readonly backoff?: BackoffPolicy;
  /** How often open requests are decided again; default 60 s, 0 never. */
  readonly resyncMs?: number;
}

/** Conflicts in a row before a request waits for its backoff instead (someone keeps changing it). */
const MAX_CONFLICT_ATTEMPTS = 5;
const DEFAULT_BACKOFF: BackoffPolicy = { initialMs: 1000, maxMs: 5 * 60_000 };
const DEFAULT_RESYNC_MS = 60_000;

/** A field of a JSON object, or undefined: the server's JSON is read without trusting its shape. */
function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null && Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
}

const text = (value: unknown): string => (typeof value === 'string' ? value : '');
const texts = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []);

function extraOf(value: unknown): Record<string, string[]> {
  const extra: Record<string, string[]> = {};
  if (typeof value !== 'object' || value === null) return extra;
  for (const [key, values] of Object.entries(value)) extra[key] = texts(values);
  return extra;
}

/** The `spec` fields a decision reads. */
export function requestFacts(csr: V1CertificateSigningRequest): CsrRequestFacts {
  const spec: unknown = csr.spec;
  return {
    signerName: text(field(spec, 'signerName')),
    usages: texts(field(spec, 'usages')),
    username: text(field(spec, 'username')),
    groups: texts(field(spec, 'groups')),
    extra: extraOf(field(spec, 'extra')),
  };
}

/** Where the request stands. */
export function statusFacts(csr: V1CertificateSigningRequest): CsrStatusFacts {
  const status: unknown = csr.status;
  const conditions = field(status, 'conditions');
  return {
    conditionTypes: Array.isArray(conditions) ? conditions.map((c: unknown) => text(field(c, 'type'))) : [],
    hasCertificate: text(field(status, 'certificate')) !== '',
  };
}

/**
 * `spec.request` as JSON carries it (base64 of the PEM), parsed; the parse failure is returned,
 * not thrown, as a decision's input.
 */
export function parseRequestField(request: string): ParsedCsr | InvalidCsrError {
  try {
    // Buffer's decoder skips what is not base64; the field must be nothing else.
    if (request === '' || request.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(request)) throw new InvalidCsrError('spec.request is not base64');
    return parseCsrPem(Buffer.from(request, 'base64').toString('utf8'));
  } catch (err: unknown) {
    if (err instanceof InvalidCsrError) return err;
    throw err;
  }
}

/** What a serving decision needs of a Node. */
export function nodeFacts(node: V1Node): NodeFacts {
  const addresses = field(field(node, 'status'), 'addresses');
  const labels = field(field(node, 'metadata'), 'labels');
  return {
    addresses: Array.isArray(addresses) ? addresses.map((a: unknown) => ({ type: text(field(a, 'type')), address: text(field(a, 'address')) })) : [],
    hasAgentLabel: field(labels, AGENT_NODE_LABEL) !== undefined,
  };
}

/** RFC 3339 in whole seconds, as the API's `Time` fields are written. */
function apiTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

/** The object to PUT to the approval subresource: the request as read, with the verdict's condition appended. */
export function withVerdict(csr: V1CertificateSigningRequest, decision: CsrDecision, nowMs: number): object {
  const condition = {
    type: decision.verdict === 'approve' ? 'Approved' : 'Denied',
    status: 'True',
    reason: decision.reason,
    message: decision.message,
    lastUpdateTime: apiTime(nowMs),
  };
  const conditions: unknown = csr.status?.conditions;
  return { ...csr, status: { ...csr.status, conditions: [...(Array.isArray(conditions) ? (conditions as unknown[]) : []), condition] } };
}

/** See this file's header. */
export class CsrApprover {
  private readonly kube: KubeClient;
  private readonly policy: ApproverPolicy;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly backoff: BackoffPolicy;
  private readonly resyncMs: number;
  private readonly informer: ListWatchInformer<V1CertificateSigningRequest>;
  /** Names waiting to be decided, in arrival order. */
  private readonly queued = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly retryTimers = new Map<string, TimerHandle>();
  private worker: Promise<void> | undefined;
  private abort = new AbortController();
  private stopped = true;
  private readonly restarts: InformerRestarts;
  private resyncTimer: TimerHandle | undefined;

  constructor(options: CsrApproverOptions) {
    this.kube = options.kube;
    this.policy = options.policy;
    this.logger = options.logger.child({ component: 'csr-approver' });
    this.clock = options.clock ?? systemClock;
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.resyncMs = options.resyncMs ?? DEFAULT_RESYNC_MS;
    this.informer = new ListWatchInformer<V1CertificateSigningRequest>({
      path: CSR_PATH,
      list: () => this.list(),
      watch: options.kube.transport,
      watchQuery: { allowWatchBookmarks: true },
      clock: this.clock,
    });
    this.informer.on('add', (csr) => { this.onChange(csr); });
    this.informer.on('update', (csr) => { this.onChange(csr); });
    this.informer.on('delete', (csr) => { this.forget(csr.metadata?.name ?? ''); });
    this.restarts = new InformerRestarts({ start: () => this.informer.start(), what: 'CertificateSigningRequests', backoff: this.backoff, clock: this.clock, logger: this.logger });
    this.informer.on('error', (err) => { this.restarts.failed(err); });
  }

  /** Starts listing and watching; resolves after the first list attempt (done, or failed and retrying). */
  async start(): Promise<void> {
    if (!this.stopped) return;
    this.stopped = false;
    this.abort = new AbortController();
    this.scheduleResync();
    await this.restarts.start();
  }

  /** Stops watching and retrying; resolves once the request being decided, if any, is done. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    this.restarts.stop();
    this.clock.clearTimeout(this.resyncTimer);
    this.resyncTimer = undefined;
    for (const timer of this.retryTimers.values()) this.clock.clearTimeout(timer);
    this.retryTimers.clear();
    this.queued.clear();
    await this.informer.stop();
    await this.worker;
  }

  private async list(): Promise<V1CertificateSigningRequestList> {
    const list = await this.kube.get<V1CertificateSigningRequestList>(CSR_PATH, undefined, this.abort.signal);
    this.restarts.listed();
    return list;
  }

  private scheduleResync(): void {
    if (this.resyncMs <= 0 || this.stopped) return;
    this.resyncTimer = this.clock.setTimeout(() => {
      this.resyncTimer = undefined;
      for (const csr of this.informer.list()) this.onChange(csr);
      this.scheduleResync();
    }, this.resyncMs);
  }

  /** Queues an open request; one waiting for its retry keeps waiting (its backoff holds). */
  private onChange(csr: V1CertificateSigningRequest): void {
    const name = csr.metadata?.name ?? '';
    if (name === '' || this.stopped || this.retryTimers.has(name)) return;
    if (isFinished(statusFacts(csr))) {
      this.failures.delete(name);
      return;
    }
    this.enqueue(name);
  }

  private forget(name: string): void {
    this.queued.delete(name);
    this.failures.delete(name);
    this.clock.clearTimeout(this.retryTimers.get(name));
    this.retryTimers.delete(name);
  }

  private enqueue(name: string): void {
    if (this.stopped) return;
    this.queued.add(name);
    this.worker ??= this.drain();
  }

  private async drain(): Promise<void> {
    // Lets `worker` be assigned before anything below runs, so the check in enqueue holds.
    await Promise.resolve();
    for (let name = this.next(); name !== undefined; name = this.next()) await this.processSafely(name);
    // Cleared in the same turn as the queue was seen empty: an enqueue after this starts a new drain.
    this.worker = undefined;
  }

  private next(): string | undefined {
    if (this.stopped) return undefined;
    const [name] = this.queued;
    if (name !== undefined) this.queued.delete(name);
    return name;
  }

  private async processSafely(name: string): Promise<void> {
    try {
      await this.process(name);
      // A revisit keeps its count: a Node that never appears is looked for ever less often.
      if (!this.retryTimers.has(name)) this.failures.delete(name);
    } catch (err: unknown) {
      // Stopping aborts requests in flight: their failures are not worth a retry.
      if (!this.stopped) this.retryLater(name, err);
    }
  }

  private retryLater(name: string, err: unknown): void {
    const retryInMs = this.scheduleAgain(name);
    this.logger.warn({ err, csr: name, failures: this.failures.get(name), retryInMs }, 'deciding a CertificateSigningRequest failed; retrying');
  }

  /** Queues the request again after the backoff of its attempts so far; returns the delay. */
  private scheduleAgain(name: string): number {
    const failures = (this.failures.get(name) ?? 0) + 1;
    this.failures.set(name, failures);
    const retryInMs = backoffDelay(this.backoff, failures);
    this.clock.clearTimeout(this.retryTimers.get(name));
    this.retryTimers.set(name, this.clock.setTimeout(() => {
      this.retryTimers.delete(name);
      this.enqueue(name);
    }, retryInMs));
    return retryInMs;
  }

  /** Decides the request and writes the verdict; on a conflict reads it again and decides again. */
  private async process(name: string): Promise<void> {
    let csr = this.informer.get(name);
    for (let attempt = 1; csr !== undefined; attempt += 1) {
      const decision = await this.decide(csr);
      if (decision.verdict === 'ignore') {
        this.logger.debug({ csr: name, username: requestFacts(csr).username, reason: decision.reason }, decision.message);
        // Nothing failed: the facts were not there yet; looked at again after the same backoff.
        if (decision.revisit === true) this.scheduleAgain(name);
        return;
      }
      try {
        await this.kube.replace(`${CSR_PATH}/${segment(name)}/approval`, withVerdict(csr, decision, this.clock.now()));
        const facts = requestFacts(csr);
        this.logger.info({ csr: name, username: facts.username, signer: facts.signerName, reason: decision.reason }, `${decision.verdict === 'approve' ? 'approved' : 'denied'}: ${decision.message}`);
        return;
      } catch (err: unknown) {
        if (!isConflict(err) || attempt >= MAX_CONFLICT_ATTEMPTS) throw err;
        this.logger.info({ csr: name, attempt }, 'the request changed while it was decided; reading it again');
        csr = await this.read(name);
      }
    }
  }

  private async decide(csr: V1CertificateSigningRequest): Promise<CsrDecision> {
    const spec = requestFacts(csr);
    const status = statusFacts(csr);
    const nodeName = nodeToRead(spec, status);
    const node = nodeName === undefined ? undefined : await this.readNode(nodeName);
    const parsed = parseRequestField(text(field(csr.spec, 'request')));
    return decideCsr({ spec, status, parsed, policy: this.policy, node });
  }

  /** The request as the server has it now; undefined once it is deleted. */
  private async read(name: string): Promise<V1CertificateSigningRequest | undefined> {
    try {
      return await this.kube.get<V1CertificateSigningRequest>(`${CSR_PATH}/${segment(name)}`, undefined, this.abort.signal);
    } catch (err: unknown) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** The Node's facts; undefined when it does not exist. */
  private async readNode(name: string): Promise<NodeFacts | undefined> {
    try {
      return nodeFacts(await this.kube.get<V1Node>(`/api/v1/nodes/${segment(name)}`, undefined, this.abort.signal));
    } catch (err: unknown) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}
