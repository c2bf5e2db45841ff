/**
 * Builds the node server from the agent's parts: its serving certificate (tls.ts), the client CA,
 * TokenReview and SubjectAccessReview with the node's credentials, the desired-pod store for
 * `/pods` and the runtime for container logs.
 */
import { readFile } from 'node:fs/promises';
import type { V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from '../kube/client.js';
import type { Logger } from 'pino';
import type { Clock } from '../util/clock.js';
import { apiAccessReviewer, apiTokenReviewer } from './api-reviewers.js';
import { Authenticator } from './authn.js';
import { NodeAuthorizer } from './authz.js';
import type { LogRuntime } from './container-logs.js';
import { nodeRoutes } from './handlers.js';
import type { StreamRuntime } from './streaming.js';
import { StatsCollector, type ImageFsSource, type StatsSource } from './stats-collector.js';
import { createNodeServer, type NodeServer } from './node-server.js';
import type { NodeMetrics } from './node-metrics.js';
import { timedDirMeasure } from './storage-metrics.js';
import { measureDir } from '../util/dir-usage.js';
import { apiCsrClient } from '../kube/certificates/csr-client.js';
import { ServingCertManager } from './serving-cert-manager.js';
import { servingCredentials } from './tls.js';
import type { CertificateAndKey } from '../kube/certificates/x509.js';
import type { ContainerCheckpointer } from '../cri/types.js';
import { CadvisorCollector } from './cadvisor-collector.js';
import { cgroupTreeOf, type CgroupTree } from './cgroup-stats-reader.js';
import { cgroupLayout } from '../reconcilers/cgroups/host-cgroupfs.js';
import { readMachineInfo, readVersionInfo } from './machine-info.js';

/** What the node server is built from. */
export interface NodeServerParts {
  readonly nodeName: string;
  readonly nodeIp: string;
  readonly port: number;
  readonly rootDir: string;
  /** The node's certificates (`--cert-dir`): the requested serving pair and the self-signed one live here. */
  readonly certDir: string;
  /** Container logs (their sizes in the summary); none reported when absent. */
  readonly podLogDir?: string;
  readonly tlsCertFile: string | undefined;
  readonly tlsPrivateKeyFile: string | undefined;
  /** The certificate comes from the CSR API and is rotated (serving-cert-manager.ts). */
  readonly rotateServerCertificates: boolean;
  readonly clientCaFile: string | undefined;
  /** The directory `/logs/` serves. */
  readonly logDir: string;
  /** `--enable-system-log-query`: `/logs/?query=…` answers the node log query. */
  readonly enableSystemLogQuery?: boolean;
  readonly kube: KubeClient;
  readonly pods: { list(): V1Pod[] };
  readonly runtime: LogRuntime & StreamRuntime & StatsSource & ContainerCheckpointer;
  readonly images: ImageFsSource;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Served as `/metrics` when given. */
  readonly metrics?: NodeMetrics;
  /** Served as `/configz` when given. */
  readonly configz?: () => Readonly<Record<string, unknown>>;
  /** `/metrics/cadvisor`: `--cgroup-root` (undefined with `--cgroups-per-qos=false`) and the sandbox image. */
  readonly cadvisor?: { readonly cgroupRoot: string | undefined; readonly sandboxImage: string };
}

/** The host's cgroup tree, read from the mount table once (it does not change while nodelet runs). */
function hostCgroupTree(): () => Promise<CgroupTree | undefined> {
  let tree: Promise<CgroupTree | undefined> | undefined;
  return () => {
    tree ??= readFile('/proc/self/mountinfo', 'utf8').then((text) => cgroupTreeOf(cgroupLayout(text)));
    return tree;
  };
}

/** The `/metrics/cadvisor` collector on the host's files. */
function cadvisorCollector(parts: NodeServerParts, settings: NonNullable<NodeServerParts['cadvisor']>): CadvisorCollector {
  return new CadvisorCollector({
    runtime: parts.runtime,
    images: parts.images,
    cgroupRoot: settings.cgroupRoot,
    sandboxImage: settings.sandboxImage,
    tree: hostCgroupTree(),
    machine: () => readMachineInfo(),
    version: () => readVersionInfo(),
    rootDirs: [parts.rootDir, ...(parts.podLogDir === undefined ? [] : [parts.podLogDir])],
  });
}

/** A follower looks at a log file that has not grown this often (the kubelet's fsnotify wakes it sooner). */
const FOLLOW_POLL_MS = 250;

/** How long the runtime's streaming server may take to accept and answer an upgrade. */
const PROXY_TIMEOUT_MS = 30_000;

/**
 * The runtime's limit on a `/run` command. The kubelet passes none (a TODO upstream); a command
 * that never ends would hold a runtime call forever, so nodelet gives it the kubelet's default
 * runtime request timeout.
 */
const RUN_TIMEOUT_SECONDS = 120;

/** The pair served at first, and where it came from; `rotating` hands each later pair to the server. */
interface InitialCredentials {
  readonly pair: CertificateAndKey | undefined;
  readonly source: string;
  readonly rotating?: ServingCertManager;
}

async function initialCredentials(parts: NodeServerParts): Promise<InitialCredentials> {
  const pkiDir = parts.certDir;
  if (parts.rotateServerCertificates) {
    const manager = new ServingCertManager({ nodeName: parts.nodeName, addresses: [parts.nodeIp, parts.nodeName], pkiDir, client: apiCsrClient(parts.kube, `nodelet-serving-${parts.nodeName}-`), clock: parts.clock, random: Math.random, logger: parts.logger });
    await manager.start();
    const pair = manager.current();
    return { pair, source: pair === undefined ? 'CSR API (waiting for approval)' : 'CSR API (stored)', rotating: manager };
  }
  const credentials = await servingCredentials({
    ...(parts.tlsCertFile === undefined ? {} : { certFile: parts.tlsCertFile }),
    ...(parts.tlsPrivateKeyFile === undefined ? {} : { keyFile: parts.tlsPrivateKeyFile }),
    pkiDir,
    nodeName: parts.nodeName,
    nodeIp: parts.nodeIp,
    now: parts.clock.now(),
  });
  return { pair: credentials, source: credentials.source };
}

/** The server, switched to each certificate the manager obtains and stopping it with itself. */
function rotatingWith(server: NodeServer, credentials: InitialCredentials): NodeServer {
  const manager = credentials.rotating;
  if (manager === undefined) return server;
  manager.onRotate((pair) => {
    server.setCredentials(pair.certPem, pair.keyPem);
  });
  // A pair issued while the server was being built.
  const latest = manager.current();
  if (latest !== undefined && latest !== credentials.pair) server.setCredentials(latest.certPem, latest.keyPem);
  return {
    ...server,
    stop: async () => {
      manager.stop();
      await server.stop();
    },
  };
}

/**
 * The Summary's and `/metrics/resource`'s collector; with `/metrics`, its directory walks are timed
 * and it answers the container log gauge at each scrape.
 */
function statsCollector(parts: NodeServerParts): StatsCollector {
  const { metrics, clock } = parts;
  const measure = metrics === undefined ? undefined : timedDirMeasure(measureDir, clock, (seconds) => { metrics.storage.diskUsageMeasured(seconds); });
  const collector = new StatsCollector({ nodeName: parts.nodeName, rootDir: parts.rootDir, ...(parts.podLogDir === undefined ? {} : { podLogDir: parts.podLogDir }), runtime: parts.runtime, images: parts.images, clock, ...(measure === undefined ? {} : { measureDir: measure }) });
  metrics?.storage.watchContainerLogs(() => collector.containerLogUsage());
  return collector;
}

/** The node server, not yet listening. Reads (makes, or requests) its certificate and reads the client CA. */
export async function buildNodeServer(parts: NodeServerParts): Promise<NodeServer> {
  const credentials = await initialCredentials(parts);
  const clientCaPem = parts.clientCaFile === undefined ? undefined : await readFile(parts.clientCaFile, 'utf8');
  parts.logger.info({ certificate: credentials.source, clientCa: parts.clientCaFile ?? 'none', address: `${parts.nodeIp}:${parts.port}` }, 'node server configured');
  const server = createNodeServer({
    address: parts.nodeIp,
    port: parts.port,
    ...(credentials.pair === undefined ? {} : { certPem: credentials.pair.certPem, keyPem: credentials.pair.keyPem }),
    ...(clientCaPem === undefined ? {} : { clientCaPem }),
    authenticator: new Authenticator(apiTokenReviewer(parts.kube), parts.clock),
    authorizer: new NodeAuthorizer(apiAccessReviewer(parts.kube), parts.nodeName, parts.clock),
    ...(parts.metrics === undefined ? {} : { metrics: parts.metrics.http }),
    routes: nodeRoutes({
      pods: parts.pods,
      runtime: parts.runtime,
      clock: parts.clock,
      followPollMs: FOLLOW_POLL_MS,
      proxyTimeoutMs: PROXY_TIMEOUT_MS,
      runTimeoutSeconds: RUN_TIMEOUT_SECONDS,
      nodeLogDir: parts.logDir,
      nodeLogQuery: parts.enableSystemLogQuery === true,
      checkpoint: { runtime: parts.runtime, rootDir: parts.rootDir },
      stats: {
        collector: statsCollector(parts),
        logger: parts.logger,
      },
      ...(parts.metrics === undefined ? {} : { metrics: { registry: parts.metrics, logger: parts.logger } }),
      ...(parts.cadvisor === undefined ? {} : { cadvisor: cadvisorCollector(parts, parts.cadvisor) }),
      ...(parts.configz === undefined ? {} : { configz: parts.configz }),
    }),
    logger: parts.logger,
  });
  return rotatingWith(server, credentials);
}
