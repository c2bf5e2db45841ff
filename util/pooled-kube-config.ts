/**
 * A KubeConfig whose API requests share one connection pool. client-node 2.0 builds a new undici
 * `Agent` (a new pool) for every request in `applySecurityAuthentication`, so every call (a status
 * patch, an event, a watch) opened its own TLS connection: a full handshake and a fresh secure
 * context with the CA parsed again, on the agent's side and the API server's, and a socket that
 * lingered until its keep-alive ran out. Measured on the test cluster (`npm run bench:cost`), TLS
 * connection setup was the agent's largest CPU cost per pod. client-go keeps one transport per
 * cluster and credentials; so does this.
 *
 * The pool is keyed by what the TLS connection is made of (server, CA, client certificate and key,
 * verification settings, and the modification time of any of these read from a file), so a
 * rotated certificate gets a new pool and the old one is closed once its requests end. Headers
 * (bearer tokens, including rotated or exec-provided ones) are still set per request by client-node.
 */
import { statSync } from 'node:fs';
import { KubeConfig, type RequestContext } from '@kubernetes/client-node';

type Dispatcher = NonNullable<ReturnType<RequestContext['getDispatcher']>>;

/** Modification time and size of a file, or '' when there is no such file (or no path). */
function fileStamp(file: string | undefined): string {
  if (file === undefined || file === '') return '';
  try {
    const stat = statSync(file);
    return `${stat.mtimeMs}:${stat.size}`;
  } catch {
    return '';
  }
}

export class PooledKubeConfig extends KubeConfig {
  private pool: { readonly key: string; readonly dispatcher: Dispatcher } | undefined;

  /** The identity of the TLS connection the current context makes. */
  private connectionKey(): string {
    const cluster = this.getCurrentCluster();
    const user = this.getCurrentUser();
    return JSON.stringify([
      cluster?.server,
      cluster?.caData,
      cluster?.caFile,
      fileStamp(cluster?.caFile),
      cluster?.skipTLSVerify,
      cluster?.tlsServerName,
      cluster?.proxyUrl,
      user?.certData,
      user?.certFile,
      fileStamp(user?.certFile),
      user?.keyData,
      user?.keyFile,
      fileStamp(user?.keyFile),
    ]);
  }

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const fresh = context.getDispatcher();
    // No dispatcher: plain fetch defaults, nothing to pool.
    if (fresh === undefined) return;
    const key = this.connectionKey();
    if (this.pool?.key === key) {
      context.setDispatcher(this.pool.dispatcher);
      return;
    }
    // The fresh pool becomes the shared one; the previous one (other credentials) closes once its
    // requests, watches included, have ended.
    const previous = this.pool?.dispatcher;
    this.pool = { key, dispatcher: fresh };
    previous?.close().catch(() => undefined);
  }

  /** Closes the shared pool (in-flight requests finish first). */
  async closePool(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    await pool?.dispatcher.close();
  }
}
