/**
 * A certificate requested through the CertificateSigningRequest API and kept current, as client-go's
 * certificate manager does for the kubelet's client (`--rotate-certificates`) and serving
 * (`--rotate-server-certificates`) certificates: a new ECDSA P-256 key, a CSR for the template's
 * signer, subject and names; once someone approves it and the signer issues it, the pair is stored
 * as `<dir>/<template.fileName>` (certificate and key in one file, as the kubelet's
 * `*-current.pem`) and handed to the listeners. A stored pair that still fits the template is
 * reused at restart. The next rotation falls at 70–84% of the certificate's lifetime (client-go's
 * jittered 70% deadline), so a fleet of nodes does not rotate at once; failures retry with capped
 * exponential backoff, and a request nobody approves within 15 minutes is abandoned for a new one
 * (client-go's wait limit).
 */
import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import path from 'node:path';
import type { Logger } from 'pino';
import { backoffDelay, type BackoffPolicy } from '../../util/backoff.js';
import type { Clock, TimerHandle } from '../../util/clock.js';
import { makeCsr } from './csr.js';
import type { CertificateAndKey, CertificateSubject } from './x509.js';

/** Where a request stands. */
export type CsrState = { readonly phase: 'pending' } | { readonly phase: 'issued'; readonly certPem: string } | { readonly phase: 'denied' | 'failed'; readonly reason: string };

/** What the manager sends to the certificates.k8s.io API. */
export interface CsrRequest {
  readonly csrPem: string;
  readonly signerName: string;
  readonly usages: readonly string[];
}

/** The certificates.k8s.io/v1 calls the manager needs (csr-client.ts talks to the API server). */
export interface CsrClient {
  /** Creates a CertificateSigningRequest; resolves with its name. */
  create(request: CsrRequest): Promise<string>;
  /** The request's state now. */
  get(name: string): Promise<CsrState>;
}

/** What a manager asks for and keeps. */
export interface CertificateTemplate {
  /** For logs: "serving certificate", "client certificate". */
  readonly label: string;
  readonly signerName: string;
  readonly usages: readonly string[];
  readonly subject: CertificateSubject;
  /** IP addresses and DNS names (subjectAltName); none for a client certificate. */
  readonly altNames: readonly string[];
  /** The pair's file in the manager's directory. */
  readonly fileName: string;
}

/** What a manager is built from. */
export interface CertificateManagerOptions {
  readonly template: CertificateTemplate;
  /** The directory of the pair file (the kubelet's `--cert-dir`, `<root-dir>/pki`). */
  readonly dir: string;
  readonly client: CsrClient;
  readonly clock: Clock;
  /** In [0, 1): the rotation jitter. */
  readonly random: () => number;
  readonly logger: Logger;
  /** How often a pending request is looked at (the kubelet watches it). */
  readonly pollMs?: number;
  readonly backoff?: BackoffPolicy;
}

const WAIT_LIMIT_MS = 15 * 60_000;
const DEFAULT_POLL_MS = 1000;
const DEFAULT_BACKOFF: BackoffPolicy = { initialMs: 2000, maxMs: 5 * 60_000 };
/**
 * The longest single wait: node's timers fire at once for delays past 2^31-1 ms (24.8 days), and a
 * year's certificate rotates 8 months out; a long wait is taken in daily steps, each re-checking the
 * deadline against the clock.
 */
export const MAX_TIMER_MS = 24 * 3600 * 1000;

/** When to rotate: 70% of the lifetime, plus up to a fifth of that again at random. */
export function rotationDeadline(certPem: string, random: number): number {
  const cert = new X509Certificate(certPem);
  const notBefore = Date.parse(cert.validFrom);
  const total = Date.parse(cert.validTo) - notBefore;
  return notBefore + total * 0.7 * (1 + 0.2 * random);
}

/** True when the certificate has not expired, names the template's subject and names, and is the key's. */
export function pairFitsTemplate(pair: CertificateAndKey, template: Pick<CertificateTemplate, 'subject' | 'altNames'>, now: number): boolean {
  const cert = new X509Certificate(pair.certPem);
  if (Date.parse(cert.validTo) <= now || !cert.subject.split('\n').includes(`CN=${template.subject.commonName}`)) return false;
  const sans = (cert.subjectAltName ?? '').split(', ');
  const keyMatches = createPublicKey(createPrivateKey(pair.keyPem)).export({ type: 'spki', format: 'pem' }) === cert.publicKey.export({ type: 'spki', format: 'pem' });
  return keyMatches && template.altNames.every((a) => (isIP(a) === 0 ? sans.includes(`DNS:${a}`) : cert.checkIP(a) !== undefined));
}

const PEM_BLOCK = /-----BEGIN ([A-Z ]+)-----[^-]+-----END \1-----\n?/g;

/** The certificate and key blocks of a stored pair file, or undefined when it is not one. */
export function parsePairFile(content: string): CertificateAndKey | undefined {
  const blocks = [...content.matchAll(PEM_BLOCK)];
  const certPem = blocks.find((b) => b[1] === 'CERTIFICATE')?.[0];
  const keyPem = blocks.find((b) => (b[1] ?? '').endsWith('PRIVATE KEY'))?.[0];
  return certPem === undefined || keyPem === undefined ? undefined : { certPem, keyPem };
}

/** The pair stored in `file`, or undefined when there is none (or it is not a pair). */
export async function readPairFile(file: string): Promise<CertificateAndKey | undefined> {
  try {
    return parsePairFile(await readFile(file, 'utf8'));
  } catch (error) {
    if (error instanceof Error && 'code' in error && error.code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Thrown (and retried with backoff) when a request is denied, fails or waits too long. */
export class CsrNotIssuedError extends Error {
  constructor(readonly csrName: string, readonly reason: string) {
    super(`certificate signing request ${csrName} not issued: ${reason}`);
    this.name = 'CsrNotIssuedError';
  }
}

export function isCsrNotIssuedError(error: unknown): error is CsrNotIssuedError {
  return error instanceof CsrNotIssuedError;
}

/** See this file's header. */
export class CertificateManager {
  private pair: CertificateAndKey | undefined;
  private timer: TimerHandle | undefined;
  /** When the next rotation is due (epoch ms). */
  private dueAt = 0;
  private failures = 0;
  private stopped = false;
  private readonly listeners: ((pair: CertificateAndKey) => void)[] = [];

  constructor(private readonly options: CertificateManagerOptions) {}

  /** The pair in use, or undefined until the first certificate is issued. */
  current(): CertificateAndKey | undefined {
    return this.pair;
  }

  /** Where the pair is stored. */
  get file(): string {
    return path.join(this.options.dir, this.options.template.fileName);
  }

  /** Called with each new pair (after it is stored). */
  onRotate(listener: (pair: CertificateAndKey) => void): void {
    this.listeners.push(listener);
  }

  /** Resolves with the first pair: the stored one when it fits, else the first one issued. */
  firstPair(): Promise<CertificateAndKey> {
    const pair = this.pair;
    if (pair !== undefined) return Promise.resolve(pair);
    return new Promise((resolve) => { this.onRotate(resolve); });
  }

  /** Loads a stored pair that still fits, and schedules the next rotation (now, when none fits). */
  async start(): Promise<void> {
    const stored = await readPairFile(this.file);
    const { template, clock } = this.options;
    if (stored !== undefined && pairFitsTemplate(stored, template, clock.now())) {
      this.pair = stored;
      this.options.logger.info({ file: this.file }, `${template.label}: reusing the stored pair`);
    }
    this.schedule(this.pair === undefined ? 0 : rotationDeadline(this.pair.certPem, this.options.random()) - clock.now());
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer);
  }

  private schedule(delayMs: number): void {
    this.dueAt = this.options.clock.now() + Math.max(0, delayMs);
    this.arm();
  }

  private arm(): void {
    if (this.stopped) return;
    const { clock } = this.options;
    this.timer = clock.setTimeout(() => {
      if (clock.now() < this.dueAt) {
        this.arm();
        return;
      }
      this.rotate().catch((error: unknown) => {
        this.failures += 1;
        const delay = backoffDelay(this.options.backoff ?? DEFAULT_BACKOFF, this.failures);
        this.options.logger.warn({ err: error, retryInMs: delay }, `${this.options.template.label}: rotation failed`);
        this.schedule(delay);
      });
    }, Math.min(Math.max(0, this.dueAt - clock.now()), MAX_TIMER_MS));
  }

  private async rotate(): Promise<void> {
    const { template, client, logger, clock } = this.options;
    const made = makeCsr({ subject: template.subject, altNames: template.altNames });
    const name = await client.create({ csrPem: made.csrPem, signerName: template.signerName, usages: template.usages });
    logger.info({ csr: name }, `${template.label}: requested, waiting for approval and issuance`);
    const certPem = await this.waitIssued(name, clock.now() + WAIT_LIMIT_MS);
    const pair = { certPem, keyPem: made.keyPem };
    if (!pairFitsTemplate(pair, template, clock.now())) throw new CsrNotIssuedError(name, 'the issued certificate does not match the request');
    await this.store(pair);
    this.pair = pair;
    this.failures = 0;
    for (const listener of this.listeners) listener(pair);
    logger.info({ csr: name, notAfter: new X509Certificate(certPem).validTo }, `${template.label}: rotated`);
    this.schedule(rotationDeadline(certPem, this.options.random()) - clock.now());
  }

  private async waitIssued(name: string, giveUpAt: number): Promise<string> {
    for (;;) {
      if (this.stopped) throw new CsrNotIssuedError(name, 'manager stopped');
      const state = await this.options.client.get(name);
      if (state.phase === 'issued') return state.certPem;
      if (state.phase !== 'pending') throw new CsrNotIssuedError(name, `${state.phase}: ${state.reason}`);
      if (this.options.clock.now() >= giveUpAt) throw new CsrNotIssuedError(name, 'not approved and issued in time');
      await new Promise<void>((resolve) => {
        this.timer = this.options.clock.setTimeout(resolve, this.options.pollMs ?? DEFAULT_POLL_MS);
      });
    }
  }

  private async store(pair: CertificateAndKey): Promise<void> {
    await mkdir(this.options.dir, { recursive: true, mode: 0o700 });
    // One write then a rename: a reader (the API transport, a restarted agent) sees the old pair or the new.
    await writeFile(`${this.file}.tmp`, pair.certPem + pair.keyPem, { mode: 0o600 });
    await rename(`${this.file}.tmp`, this.file);
  }
}
