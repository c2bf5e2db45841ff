/**
 * The node's side of pod name resolution: reads the host's resolv.conf and hosts file, forms each
 * pod's resolver configuration (recording the kubelet's warnings) and keeps each pod's managed
 * /etc/hosts at `<rootDir>/pods/<uid>/etc-hosts`.
 *
 * The hosts file is (re)written whenever a container is about to start, as the kubelet's
 * `makeMounts` does: after the sandbox exists (the pod IP is known), before the container is
 * created. It is replaced by write-then-rename and only when its content changed, so a reader
 * (a running container, a restarted agent) never sees it half-written. The pod's directory, and so
 * the file, goes with the pod's cleanup.
 *
 * The cluster settings can change while the agent runs (the NodeAgent's `clusterDNS` and
 * `clusterDomain`): a change applies to sandboxes and hosts files formed after it; running
 * sandboxes keep the resolver they were created with, as on a kubelet whose config changed.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { DnsConfig, Mount } from '../../cri/types.js';
import type { EventRecorder } from '../events/event-recorder.js';
import { hasErrorCode } from '../volumes/fs-util.js';
import { POD_DIR_MODE, podDir } from '../volumes/layout.js';
import { managedHostsFileContent, nodeHostsFileContent, parseResolvConf, podHostName } from './host-files.js';
import { computePodDns, type ClusterDnsSettings } from './pod-dns.js';

export const ETC_HOSTS_PATH = '/etc/hosts';
const HOSTS_FILE_NAME = 'etc-hosts';
const HOSTS_FILE_MODE = 0o644;

/** The node's name-resolution settings. */
export interface PodDnsSettings {
  readonly cluster: ClusterDnsSettings;
  /** The host resolv.conf that `Default` pods get (`--resolv-conf`); `''` disables it (local resolver, no search). */
  readonly resolvConf: string;
  /** The node's hosts file that host-network pods get; `/etc/hosts`. */
  readonly nodeHostsFile: string;
}

/** Without `--cluster-dns`: cluster-first pods fall back to the host's resolver. */
export const DEFAULT_POD_DNS_SETTINGS: PodDnsSettings = {
  cluster: { servers: [], domain: 'cluster.local' },
  resolvConf: '/etc/resolv.conf',
  nodeHostsFile: ETC_HOSTS_PATH,
};

export interface PodDnsConfigurerOptions {
  readonly settings: PodDnsSettings;
  readonly rootDir: string;
  readonly nodeIp: string;
  readonly events: EventRecorder;
}

/** What {@link PodDnsConfigurer.hostsMount} needs about the container about to start. */
export interface HostsMountRequest {
  readonly pod: V1Pod;
  readonly container: V1Container;
  /** The sandbox's IPs (empty while unknown). */
  readonly podIps: readonly string[];
}

export class PodDnsConfigurer {
  private cluster: ClusterDnsSettings;

  constructor(private readonly options: PodDnsConfigurerOptions) {
    this.cluster = options.settings.cluster;
  }

  /** The cluster settings now in effect. */
  clusterSettings(): ClusterDnsSettings {
    return this.cluster;
  }

  /** Replaces the cluster settings for sandboxes and hosts files formed from now on. */
  setClusterSettings(cluster: ClusterDnsSettings): void {
    this.cluster = { servers: [...cluster.servers], domain: cluster.domain };
  }

  /**
   * The pod's resolver configuration for its sandbox; records the warnings forming it raised.
   * @throws when the host resolv.conf cannot be read or is refused (the sandbox cannot be configured).
   */
  async sandboxDnsConfig(pod: V1Pod): Promise<DnsConfig> {
    const file = this.options.settings.resolvConf;
    const host = file === '' ? undefined : parseResolvConf(await readFile(file, 'utf8'));
    const result = computePodDns({ pod, cluster: this.cluster, host, nodeIp: this.options.nodeIp });
    for (const event of result.events) this.options.events.record(pod, event);
    return result.config;
  }

  /**
   * Ensures the pod's hosts file is current and returns its mount at /etc/hosts — or nothing when
   * the container mounts something at /etc/hosts itself, or the pod (not on the host's network)
   * has no IP yet, as the kubelet's `shouldMountHostsFile`.
   */
  async hostsMount(request: HostsMountRequest): Promise<Mount | undefined> {
    const { pod, container, podIps } = request;
    if ((container.volumeMounts ?? []).some((m) => m.mountPath === ETC_HOSTS_PATH)) return undefined;
    const hostNetwork = pod.spec?.hostNetwork === true;
    if (!hostNetwork && podIps.length === 0) return undefined;
    const aliases = pod.spec?.hostAliases ?? [];
    const content = hostNetwork
      ? nodeHostsFileContent(await readFile(this.options.settings.nodeHostsFile, 'utf8'), aliases)
      : managedHostsFileContent(podIps, podHostName(pod, this.cluster.domain), aliases);
    const dir = podDir(this.options.rootDir, pod.metadata?.uid ?? '');
    const hostPath = path.join(dir, HOSTS_FILE_NAME);
    await replaceFileIfChanged(dir, hostPath, content);
    return { containerPath: ETC_HOSTS_PATH, hostPath, readonly: false, selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE' };
  }
}

async function currentContent(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if (hasErrorCode(error, 'ENOENT')) return undefined;
    throw error;
  }
}

/**
 * Makes `file` hold `content`: written to a temporary file in the same directory, then renamed over
 * it (atomic), so no reader sees a partial file. An unchanged file is left alone: containers
 * already running keep the same inode as the ones about to start.
 */
async function replaceFileIfChanged(dir: string, file: string, content: string): Promise<void> {
  if ((await currentContent(file)) === content) return;
  await mkdir(dir, { recursive: true, mode: POD_DIR_MODE });
  const temporary = path.join(dir, `.${HOSTS_FILE_NAME}.${randomBytes(6).toString('hex')}`);
  try {
    await writeFile(temporary, content, { mode: HOSTS_FILE_MODE });
    // Any user in the container must read it, whatever the agent's umask.
    await chmod(temporary, HOSTS_FILE_MODE);
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}
