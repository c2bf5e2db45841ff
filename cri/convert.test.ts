import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  containerConfigToWire,
  containerFilterToWire,
  podSandboxConfigToWire,
  podSandboxFilterToWire,
} from './convert-request.js';
import {
  bigintFromWire,
  containerFromWire,
  containerStatusFromWire,
  filesystemUsageFromWire,
  imageFromWire,
  podSandboxFromWire,
  podSandboxStatusFromWire,
} from './convert-response.js';
import { isCriInvalidResponse } from './errors.js';
import { criMethod } from './proto.js';
import type { ContainerConfig, PodSandboxConfig } from './types.js';
import type { WireContainer, WireContainerStatus, WirePodSandbox, WirePodSandboxStatus } from './wire.js';

const sandboxConfig: PodSandboxConfig = {
  metadata: { name: 'web', uid: 'uid-1', namespace: 'default', attempt: 2 },
  hostname: 'web',
  logDirectory: '/var/log/pods/default_web_uid-1',
  dnsConfig: { servers: ['10.96.0.10'], searches: ['default.svc.cluster.local'], options: ['ndots:5'] },
  portMappings: [{ protocol: 'UDP', containerPort: 53, hostPort: 5353, hostIp: '127.0.0.1' }],
  labels: { 'io.kubernetes.pod.uid': 'uid-1' },
  annotations: { note: 'a' },
  linux: {
    cgroupParent: '/nodelet/poduid-1',
    securityContext: {
      namespaceOptions: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' },
      privileged: true,
      runAsUser: 0n,
      runAsGroup: 3000n,
      supplementalGroups: [4000n, 9007199254740993n],
      readonlyRootfs: true,
    },
    sysctls: { 'net.ipv4.ip_forward': '1' },
  },
};

const containerConfig: ContainerConfig = {
  metadata: { name: 'app', attempt: 3 },
  image: { image: 'docker.io/library/busybox:1.35', annotations: { a: 'b' } },
  command: ['sh', '-c'],
  args: ['echo hi'],
  workingDir: '/tmp',
  envs: [{ key: 'A', value: 'héllo=1' }],
  mounts: [
    { containerPath: '/data', hostPath: '/srv/data', readonly: true, selinuxRelabel: true, propagation: 'PROPAGATION_BIDIRECTIONAL' },
    { containerPath: '/plain', hostPath: '/srv/plain' },
  ],
  labels: { 'io.kubernetes.container.name': 'app' },
  annotations: { 'io.kubernetes.container.restartCount': '3' },
  logPath: 'app/3.log',
  stdin: true,
  stdinOnce: true,
  tty: true,
  linux: {
    resources: { cpuPeriod: 100000n, cpuQuota: 50000n, cpuShares: 512n, memoryLimitInBytes: 134217728n, oomScoreAdj: -997n },
    securityContext: {
      privileged: false,
      namespaceOptions: { network: 'POD', pid: 'TARGET', ipc: 'POD' },
      runAsUser: 1000n,
      runAsGroup: 1000n,
      supplementalGroups: [5n],
      readonlyRootfs: true,
      noNewPrivs: true,
      capabilities: { addCapabilities: ['NET_ADMIN'], dropCapabilities: ['ALL'] },
    },
  },
};

/** Asserts every defined leaf of `expected` is present, equal, in `actual`. */
function assertContains(actual: unknown, expected: unknown, path = '$'): void {
  if (expected === undefined) return;
  if (typeof expected !== 'object' || expected === null) {
    assert.deepEqual(actual, expected, `at ${path}`);
    return;
  }
  assert.ok(typeof actual === 'object' && actual !== null, `missing object at ${path}`);
  for (const [key, value] of Object.entries(expected)) {
    assertContains((actual as Record<string, unknown>)[key], value, `${path}.${key}`);
  }
}

/** Encodes a request with api.proto and decodes it again, as the runtime would see it. */
function throughTheWire(method: string, request: object): Record<string, unknown> {
  const definition = criMethod('RuntimeService', method);
  return definition.requestDeserialize(definition.requestSerialize(request)) as Record<string, unknown>;
}

void describe('request conversion', () => {
  void it('sends int64 values as decimal strings, including ones beyond Number precision', () => {
    const sc = podSandboxConfigToWire(sandboxConfig).linux?.securityContext;
    assert.deepEqual([sc?.supplementalGroups, sc?.runAsUser], [['4000', '9007199254740993'], { value: '0' }]);
    assert.equal(containerConfigToWire(containerConfig).linux?.resources?.oomScoreAdj, '-997');
  });

  void it('keeps every field of a fully populated sandbox and container config through api.proto', () => {
    const request = {
      podSandboxId: 'sb',
      config: containerConfigToWire(containerConfig),
      sandboxConfig: podSandboxConfigToWire(sandboxConfig),
    };
    const decoded = throughTheWire('CreateContainer', request);
    // A misspelt field name would be dropped silently by the encoder; this catches it.
    assertContains(decoded, JSON.parse(JSON.stringify(request)));
  });

  void it('leaves optional sub-messages unset when the caller gave none, so runtime defaults apply', () => {
    const minimal: ContainerConfig = { ...containerConfig, linux: undefined, mounts: [{ containerPath: '/a', hostPath: '/b' }] };
    const decoded = throughTheWire('CreateContainer', { config: containerConfigToWire(minimal) });
    const config = decoded.config as Record<string, unknown>;
    assert.equal(config.linux, null);
    assert.deepEqual(config.mounts, [
      { containerPath: '/a', hostPath: '/b', readonly: false, selinuxRelabel: false, propagation: 'PROPAGATION_PRIVATE', uidMappings: [], gidMappings: [], recursiveReadOnly: false, image: null, imageSubPath: '' },
    ]);
  });

  void it('wraps a state filter so SANDBOX_READY (enum value 0) still filters', () => {
    assert.deepEqual(throughTheWire('ListPodSandbox', { filter: podSandboxFilterToWire({ state: 'SANDBOX_READY' }) }).filter, {
      id: '',
      state: { state: 'SANDBOX_READY' },
      labelSelector: {},
    });
    assert.equal(throughTheWire('ListPodSandbox', { filter: podSandboxFilterToWire({ id: 'x' }) }).filter !== null, true);
    assert.equal(podSandboxFilterToWire(undefined), undefined);
  });

  void it('carries every container filter criterion', () => {
    const filter = { id: 'c', state: 'CONTAINER_CREATED', podSandboxId: 's', labelSelector: { a: 'b' } } as const;
    assert.deepEqual(throughTheWire('ListContainers', { filter: containerFilterToWire(filter) }).filter, {
      id: 'c',
      state: { state: 'CONTAINER_CREATED' },
      podSandboxId: 's',
      labelSelector: { a: 'b' },
    });
  });
});

const wireSandbox: WirePodSandbox = {
  id: 'sb1',
  metadata: { name: 'web', uid: 'u', namespace: 'ns', attempt: 1 },
  state: 'SANDBOX_NOTREADY',
  createdAt: '1700000000123456789',
  labels: { a: 'b' },
  annotations: {},
  runtimeHandler: '',
};

const wireContainer: WireContainer = {
  id: 'c1',
  podSandboxId: 'sb1',
  metadata: { name: 'app', attempt: 0 },
  image: { image: 'busybox', annotations: {} },
  imageRef: 'sha256:abc',
  state: 'CONTAINER_EXITED',
  createdAt: '5',
  labels: {},
  annotations: { k: 'v' },
};

const wireContainerStatus: WireContainerStatus = {
  id: 'c1',
  metadata: { name: 'app', attempt: 0 },
  state: 'CONTAINER_EXITED',
  createdAt: '1',
  startedAt: '2',
  finishedAt: '3',
  exitCode: 143,
  image: null,
  imageRef: 'sha256:abc',
  reason: 'Error',
  message: '',
  labels: {},
  annotations: {},
  mounts: [{ containerPath: '/a', hostPath: '/b', readonly: true, selinuxRelabel: false, propagation: 'PROPAGATION_HOST_TO_CONTAINER' }],
  logPath: '/var/log/pods/x/app/0.log',
  resources: null,
  user: null,
};

void describe('response conversion', () => {
  void it('turns int64 strings into exact bigints, and a malformed one into 0', () => {
    assert.equal(podSandboxFromWire('ListPodSandbox', wireSandbox).createdAt, 1700000000123456789n);
    assert.equal(bigintFromWire('-42'), -42n);
    assert.equal(bigintFromWire(''), 0n);
    assert.equal(bigintFromWire('1e5'), 0n);
  });

  void it("converts the first process's user when the runtime reports it, and leaves it out when not (containerd 1.6)", () => {
    const user = containerStatusFromWire('ContainerStatus', { ...wireContainerStatus, user: { linux: { uid: '1000', gid: '3000', supplementalGroups: ['3000', '4000'] } } }).user;
    assert.deepEqual(user, { uid: 1000n, gid: 3000n, supplementalGroups: [3000n, 4000n] });
    assert.equal(containerStatusFromWire('ContainerStatus', wireContainerStatus).user, undefined);
    assert.equal(containerStatusFromWire('ContainerStatus', { ...wireContainerStatus, user: { linux: null } }).user, undefined);
  });

  void it('maps an enum value this proto does not know to the safe fallback', () => {
    assert.equal(podSandboxFromWire('ListPodSandbox', { ...wireSandbox, state: 7 }).state, 'SANDBOX_NOTREADY');
    assert.equal(containerFromWire('ListContainers', { ...wireContainer, state: 9 }).state, 'CONTAINER_UNKNOWN');
  });

  void it('converts a container status, with an absent image as an empty image name', () => {
    const status = containerStatusFromWire('ContainerStatus', wireContainerStatus);
    assert.deepEqual(status, {
      id: 'c1',
      metadata: { name: 'app', attempt: 0 },
      state: 'CONTAINER_EXITED',
      createdAt: 1n,
      startedAt: 2n,
      finishedAt: 3n,
      exitCode: 143,
      image: { image: '' },
      imageRef: 'sha256:abc',
      reason: 'Error',
      message: '',
      labels: {},
      annotations: {},
      mounts: [{ containerPath: '/a', hostPath: '/b', readonly: true, selinuxRelabel: false, propagation: 'PROPAGATION_HOST_TO_CONTAINER' }],
      logPath: '/var/log/pods/x/app/0.log',
    });
  });

  void it('reads the cgroup values the runtime applies, and none when it reports none', () => {
    assert.equal('resources' in containerStatusFromWire('ContainerStatus', wireContainerStatus), false);
    const linux = { cpuPeriod: '100000', cpuQuota: '30000', cpuShares: '204', memoryLimitInBytes: '134217728' };
    const status = containerStatusFromWire('ContainerStatus', { ...wireContainerStatus, resources: { linux } });
    assert.deepEqual(status.resources, { cpuPeriod: 100000n, cpuQuota: 30000n, cpuShares: 204n, memoryLimitInBytes: 134217728n });
  });

  void it('reports the sandbox network only when the runtime sent one', () => {
    const base: WirePodSandboxStatus = { ...wireSandbox, network: null };
    assert.equal('network' in podSandboxStatusFromWire('PodSandboxStatus', base), false);
    const withIp = podSandboxStatusFromWire('PodSandboxStatus', {
      ...base,
      network: { ip: '10.214.0.5', additionalIps: [{ ip: 'fd00::5' }] },
    });
    assert.deepEqual(withIp.network, { ip: '10.214.0.5', additionalIps: ['fd00::5'] });
  });

  void it('rejects objects without an ID, and statuses without metadata, as invalid responses', () => {
    const rejects: [string, () => unknown][] = [
      ['sandbox without ID', () => podSandboxFromWire('ListPodSandbox', { ...wireSandbox, id: '' })],
      ['sandbox without metadata', () => podSandboxFromWire('ListPodSandbox', { ...wireSandbox, metadata: null })],
      ['container without ID', () => containerFromWire('ListContainers', { ...wireContainer, id: '' })],
      ['absent container status', () => containerStatusFromWire('ContainerStatus', null)],
      ['container status without metadata', () => containerStatusFromWire('ContainerStatus', { ...wireContainerStatus, metadata: null })],
      ['absent sandbox status', () => podSandboxStatusFromWire('PodSandboxStatus', null)],
      ['image without ID', () => imageFromWire('ImageStatus', { id: '', repoTags: [], repoDigests: [], size: '1', uid: null, username: '', pinned: false })],
    ];
    for (const [what, convert] of rejects) {
      assert.throws(convert, (e: unknown) => isCriInvalidResponse(e), what);
    }
  });

  void it('converts an image with its uint64 size', () => {
    assert.deepEqual(imageFromWire('ListImages', { id: 'sha256:1', repoTags: ['t'], repoDigests: ['d'], size: '18446744073709551615', uid: null, username: '', pinned: false }), {
      id: 'sha256:1',
      repoTags: ['t'],
      repoDigests: ['d'],
      size: 18446744073709551615n,
      username: '',
    });
  });

  void it("converts an image's user: a numeric uid (0 included, told apart from unset) or a name", () => {
    const base = { id: 'sha256:1', repoTags: [], repoDigests: [], size: '1', pinned: false };
    assert.equal(imageFromWire('ImageStatus', { ...base, uid: { value: '0' }, username: '' }).uid, 0n);
    assert.equal(imageFromWire('ImageStatus', { ...base, uid: { value: '65534' }, username: '' }).uid, 65534n);
    const named = imageFromWire('ImageStatus', { ...base, uid: null, username: 'nobody' });
    assert.equal(named.uid, undefined);
    assert.equal(named.username, 'nobody');
  });

  void it('converts a pinned image, and an image filesystem (a usage without a mountpoint is invalid)', () => {
    const base = { id: 'sha256:1', repoTags: [], repoDigests: [], size: '1', uid: null, username: '' };
    assert.equal(imageFromWire('ListImages', { ...base, pinned: true }).pinned, true);
    assert.equal(imageFromWire('ListImages', { ...base, pinned: false }).pinned, undefined);
    const wire = { timestamp: '5', fsId: { mountpoint: '/var/lib/containerd/snap' }, usedBytes: { value: '18446744073709551615' }, inodesUsed: null };
    assert.deepEqual(filesystemUsageFromWire('ImageFsInfo', wire), { timestamp: 5n, mountpoint: '/var/lib/containerd/snap', usedBytes: 18446744073709551615n, inodesUsed: 0n });
    assert.throws(() => filesystemUsageFromWire('ImageFsInfo', { ...wire, fsId: null }), (e: unknown) => isCriInvalidResponse(e));
  });
});
