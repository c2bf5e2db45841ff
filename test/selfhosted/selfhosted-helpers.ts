/**
 * Helpers of the self-hosted suite: the chart's values for the test cluster, the in-pod containerd
 * seen from the host (its socket is a host path), a kubelet-serving CSR approver, and the host-side
 * leftovers of an install, counted.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { kubectl } from '../e2e/helpers.js';

export { freeLoopbackPort } from '../integration/helpers/free-port.js';

const run = promisify(execFile);

/** Host paths of the chart's defaults (values.yaml): the in-pod containerd's and agent's. */
export const HOST_PATHS = {
  containerdState: '/run/nodelet-containerd',
  containerdRoot: '/var/lib/nodelet-containerd',
  agentRoot: '/var/lib/nodelet',
  podLogs: '/var/log/nodelet-pods',
} as const;
export const IN_POD_SOCKET = `${HOST_PATHS.containerdState}/containerd.sock`;
/** The harness's closed loopback port every pull of the in-pod containerd is sent to. */
export const PULL_SINK = 'http://127.0.0.1:5999';
export const DASHBOARD_PORT = 18088;

/** The values the suite installs with: everything on loopback or the harness's second bridge. */
export function installValues(env: { bridge: string; subnet: string; redisUrl: string; apiHost: string; apiPort: string }): object {
  return {
    // Imported into the host's containerd by image/import.sh: never pulled.
    image: { pullPolicy: 'Never' },
    // The harness's Redis on loopback, which the host-network agent reaches (and the dashboard, on
    // the host network too): the one the host-process agent uses, so the dashboard sees both queues.
    redis: { mode: 'external', url: env.redisUrl },
    runtime: {
      containerd: {
        // This VM denies CAP_SYS_RESOURCE (as the harness's own containerd config says).
        restrictOOMScoreAdj: true,
        // Every pull goes to a closed loopback port; the images are imported instead.
        registryHosts: { _default: `server = "${PULL_SINK}"\n\n[host."${PULL_SINK}"]\n  capabilities = ["pull", "resolve"]\n` },
      },
      cni: { bridge: env.bridge, subnet: env.subnet, ipMasq: false },
    },
    // The API server verifies node server certificates with the cluster CA: ask for one (approved
    // by the chart's approver, as the agent's client certificate is).
    agent: {
      rotateServerCertificates: true,
      // The harness runs no kube-proxy and blackholes the service range: the in-cluster config's
      // kubernetes Service IP leads nowhere. Point it at the API server's own address instead, as
      // on any cluster without kube-proxy.
      extraEnv: [{ name: 'KUBERNETES_SERVICE_HOST', value: env.apiHost }, { name: 'KUBERNETES_SERVICE_PORT', value: env.apiPort }],
    },
    dashboard: { hostNetwork: true, port: DASHBOARD_PORT },
    // The approver reaches the API server the same way (no kube-proxy here).
    approver: { extraEnv: [{ name: 'KUBERNETES_SERVICE_HOST', value: env.apiHost }, { name: 'KUBERNETES_SERVICE_PORT', value: env.apiPort }] },
  };
}

/** crictl against the in-pod containerd, through its socket's host path. */
export async function inPodCrictl(args: readonly string[]): Promise<string> {
  const endpoint = `unix://${IN_POD_SOCKET}`;
  const { stdout } = await run('crictl', ['--runtime-endpoint', endpoint, '--image-endpoint', endpoint, ...args], { timeout: 60_000, maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

/**
 * `ctr images import` of an OCI tar into the in-pod containerd's CRI namespace. `--local`: the
 * harness's ctr is containerd 2's, whose default import goes through the transfer service, which
 * the previous release's containerd 1.6 does not serve (test:upgrade).
 */
export async function importIntoInPodContainerd(tar: string): Promise<void> {
  await run('ctr', ['--address', IN_POD_SOCKET, '--namespace', 'k8s.io', 'images', 'import', '--local', tar], { timeout: 120_000 });
}

/** The test images the harness builds (test/images/build.sh): name → OCI tar. */
export async function testImageTars(repoDir: string): Promise<Map<string, string>> {
  const { stdout } = await run('bash', [`${repoDir}/test/images/build.sh`], { timeout: 300_000 });
  return new Map(stdout.trim().split('\n').map((line) => {
    const [name, tar] = line.split(' ');
    return [name ?? '', tar ?? ''] as const;
  }));
}

/** IDs of the sandboxes of a pod UID, in the in-pod containerd or the host's (the cluster's crictl config). */
export async function sandboxIds(uid: string, where: 'in-pod' | 'host'): Promise<string[]> {
  const args = ['pods', '-q', '--label', `io.kubernetes.pod.uid=${uid}`];
  const out = where === 'in-pod' ? await inPodCrictl(args) : (await run('crictl', args, { timeout: 60_000 })).stdout;
  return out.split('\n').filter((l) => l !== '');
}

/**
 * Deletes the certificate requests the agent of `release` made (as its ServiceAccount or as its
 * Node): the API server keeps them an hour after issue, and a later run must see only its own.
 */
export async function deleteAgentCsrs(usernames: readonly string[]): Promise<void> {
  const list = JSON.parse(await kubectl(['get', 'csr', '-o', 'json'])) as { items: { metadata: { name: string }; spec: { username: string } }[] };
  const names = list.items.filter((c) => usernames.includes(c.spec.username)).map((c) => c.metadata.name);
  if (names.length > 0) await kubectl(['delete', 'csr', ...names, '--ignore-not-found']);
}

/** What an install leaves on the host, each a list of descriptions (empty: nothing). */
export interface HostLeftovers {
  readonly processes: string[];
  readonly mounts: string[];
  readonly veths: string[];
  readonly cgroups: string[];
  readonly dirs: string[];
}

async function lines(command: string, args: readonly string[]): Promise<string[]> {
  try {
    const { stdout } = await run(command, [...args], { timeout: 30_000 });
    return stdout.split('\n').filter((l) => l !== '');
  } catch (error) {
    // pgrep exits 1 when nothing matches: no lines.
    if ((error as { code?: unknown }).code === 1) return [];
    throw error;
  }
}

/** Counts the in-pod containerd's processes, mounts, veths, cgroups and host directories. */
export async function hostLeftovers(bridge: string): Promise<HostLeftovers> {
  const processes = [
    ...await lines('pgrep', ['-af', 'containerd --config /etc/nodelet/containerd.toml']),
    ...await lines('pgrep', ['-af', `containerd-shim-runc-v2 .*-address ${IN_POD_SOCKET}`]),
  ];
  const roots = Object.values(HOST_PATHS);
  const mounts = (await lines('findmnt', ['-rn', '-o', 'TARGET'])).filter((t) => roots.some((r) => t === r || t.startsWith(`${r}/`)));
  const veths = await lines('ip', ['-o', 'link', 'show', 'master', bridge]);
  const cgroups = existsSync('/sys/fs/cgroup/cgroup.controllers')
    ? (existsSync('/sys/fs/cgroup/nodelet-shims') ? ['/sys/fs/cgroup/nodelet-shims'] : [])
    : readdirSync('/sys/fs/cgroup').map((h) => `/sys/fs/cgroup/${h}/nodelet-shims`).filter((p) => existsSync(p));
  const dirs = roots.filter((p) => existsSync(p));
  return { processes, mounts, veths, cgroups, dirs };
}

/**
 * The host cgroup of an in-pod container's first process, in the hierarchy that holds the memory
 * controller: the v1 `memory` line of /proc/<pid>/cgroup, else the v2 `0::` line.
 */
export async function inPodContainerCgroup(containerId: string): Promise<string> {
  const inspect = JSON.parse(await inPodCrictl(['inspect', containerId])) as { info?: { pid?: number } };
  const pid = inspect.info?.pid;
  if (pid === undefined || pid <= 0) throw new Error(`crictl inspect ${containerId} gives no pid`);
  const table = (await readFile(`/proc/${pid}/cgroup`, 'utf8')).split('\n');
  const memory = table.find((l) => l.split(':')[1]?.split(',').includes('memory') === true) ?? table.find((l) => l.startsWith('0::'));
  if (memory === undefined) throw new Error(`/proc/${pid}/cgroup names no memory cgroup`);
  return memory.slice(memory.indexOf(':', memory.indexOf(':') + 1) + 1);
}

/** The v2 cgroup (the `0::` line of /proc/<pid>/cgroup) of each of the in-pod containerd's shims. */
export async function inPodShimV2Cgroups(): Promise<string[]> {
  const shims = await lines('pgrep', ['-f', `containerd-shim-runc-v2 .*-address ${IN_POD_SOCKET}`]);
  const cgroups: string[] = [];
  for (const pid of shims) {
    const table = await readFile(`/proc/${pid}/cgroup`, 'utf8').catch(() => '');
    const unified = table.split('\n').find((l) => l.startsWith('0::'));
    if (unified !== undefined) cgroups.push(unified.slice(3));
  }
  return cgroups;
}

/**
 * The chart's Bidirectional mounts need their host paths on a shared mount (systemd makes `/`
 * shared; this machine's `/` is private): each one not already shared becomes a shared bind mount
 * of itself, as an operator of such a host would do. Returns the paths it mounted (to unmount).
 */
export async function makeSharedMounts(): Promise<string[]> {
  const mounted: string[] = [];
  for (const dir of [HOST_PATHS.containerdState, HOST_PATHS.containerdRoot, HOST_PATHS.agentRoot]) {
    await run('mkdir', ['-p', dir]);
    const propagation = (await run('findmnt', ['-no', 'PROPAGATION', '--target', dir])).stdout.trim();
    if (propagation.startsWith('shared')) continue;
    await run('mount', ['--bind', dir, dir]);
    mounted.push(dir);
    await run('mount', ['--make-shared', dir]);
  }
  return mounted;
}

/** One line of counts, for the printed figures and assertion messages. */
export function describeLeftovers(l: HostLeftovers): string {
  return `processes ${l.processes.length}, mounts ${l.mounts.length}, veths ${l.veths.length}, cgroups ${l.cgroups.length}, host dirs ${l.dirs.length}`;
}

/**
 * A Redis of the suite's own on loopback that requires a password (the harness's has none), for the
 * password upgrade: the host-network agent and dashboard reach it. Nothing persisted.
 */
export class PasswordRedis {
  private readonly child: ChildProcess;
  private readonly exited: Promise<void>;

  /** `bind`: the addresses it listens on (a pod reaches the host's NODE_IP, never its loopback). */
  constructor(readonly port: number, password: string, bind: readonly string[] = ['127.0.0.1']) {
    this.child = spawn('redis-server', ['--bind', bind.join(' '), '--port', String(port), '--requirepass', password, '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    this.exited = new Promise((resolve) => this.child.once('exit', () => { resolve(); }));
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** redis-cli as `user` (default: the default user) with a password (through REDISCLI_AUTH, not the command line); refuses an error reply. */
  async cli(password: string, args: readonly string[], user?: string): Promise<string> {
    const userArgs = user === undefined ? [] : ['--user', user];
    const { stdout } = await run('redis-cli', ['-p', String(this.port), ...userArgs, ...args], { env: { ...process.env, REDISCLI_AUTH: password }, timeout: 10_000 });
    // redis-cli exits 0 on an error reply (NOAUTH, WRONGPASS): it must not pass for an answer.
    if (/^(ERR|NOAUTH|WRONGPASS|NOPERM)\b/.test(stdout.trim())) throw new Error(`redis-cli ${args.join(' ')}: ${stdout.trim()}`);
    return stdout;
  }

  /** Every key matching a glob pattern (SCAN, never KEYS). */
  async keys(password: string, pattern: string): Promise<string[]> {
    return (await this.cli(password, ['--scan', '--pattern', pattern])).split('\n').filter((k) => k !== '');
  }

  /** Stops the server (idempotent). */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    await this.exited;
  }
}
