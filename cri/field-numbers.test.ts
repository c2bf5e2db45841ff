/**
 * The field numbers of `api.proto` are the wire identity of each field: a wrong one is silently
 * dropped or misread by the runtime. These tests serialize requests with our proto and walk the
 * raw protobuf bytes, expecting the numbers of upstream k8s.io/cri-api v0.36.3
 * (pkg/apis/runtime/v1/api.proto), transcribed here for the security fields.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { containerConfigToWire, linuxResourcesToWire, podSandboxConfigToWire } from './convert-request.js';
import { criMethod } from './proto.js';
import type { ContainerConfig, PodSandboxConfig } from './types.js';

/** One decoded field: number and its raw value (varint as bigint, length-delimited as bytes). */
interface RawField {
  readonly field: number;
  readonly value: bigint | Buffer;
}

function varint(buf: Buffer, at: number): [bigint, number] {
  let result = 0n;
  let shift = 0n;
  let pos = at;
  for (;;) {
    const byte = buf[pos++] ?? 0;
    result |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return [result, pos];
    shift += 7n;
  }
}

/** The top-level fields of a message (varint and length-delimited only: all the CRI uses here). */
function fields(buf: Buffer): RawField[] {
  const out: RawField[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const [tag, afterTag] = varint(buf, pos);
    const wireType = Number(tag & 7n);
    const field = Number(tag >> 3n);
    const [value, afterValue] = varint(buf, afterTag);
    if (wireType === 0) {
      out.push({ field, value });
      pos = afterValue;
    } else if (wireType === 2) {
      const end = afterValue + Number(value);
      out.push({ field, value: buf.subarray(afterValue, end) });
      pos = end;
    } else {
      throw new Error(`unexpected wire type ${wireType}`);
    }
  }
  return out;
}

function sub(buf: Buffer, ...path: number[]): Buffer {
  let current = buf;
  for (const number of path) {
    const found = fields(current).find((f) => f.field === number)?.value;
    assert.ok(Buffer.isBuffer(found), `no message field ${number} on the path ${path.join('.')}`);
    current = found;
  }
  return current;
}

function strings(buf: Buffer, number: number): string[] {
  return fields(buf).filter((f) => f.field === number).map((f) => (Buffer.isBuffer(f.value) ? f.value.toString() : String(f.value)));
}

function varints(buf: Buffer, number: number): bigint[] {
  return fields(buf).filter((f) => f.field === number).map((f) => (typeof f.value === 'bigint' ? f.value : -1n));
}

const sandbox: PodSandboxConfig = {
  metadata: { name: 'p', uid: 'u', namespace: 'n', attempt: 0 },
  hostname: 'p',
  logDirectory: '/l',
  labels: {},
  annotations: {},
  linux: {
    securityContext: {
      privileged: true,
      selinuxOptions: { user: 'system_u', role: 'system_r', type: 'spc_t', level: 's0:c1,c2' },
      seccomp: { profileType: 'Unconfined' },
      apparmor: { profileType: 'Localhost', localhostRef: 'prof' },
    },
    sysctls: {},
  },
};

const config: ContainerConfig = {
  metadata: { name: 'c', attempt: 0 },
  image: { image: 'i' },
  command: [],
  args: [],
  workingDir: '',
  envs: [],
  mounts: [],
  labels: {},
  annotations: {},
  logPath: 'c/0.log',
  stdin: false,
  stdinOnce: false,
  tty: false,
  linux: {
    securityContext: {
      runAsUser: 0n,
      runAsUsername: 'nobody',
      maskedPaths: ['/proc/kcore', '/proc/keys'],
      readonlyPaths: ['/proc/sys'],
      seccomp: { profileType: 'Localhost', localhostRef: '/var/lib/nodelet/seccomp/a.json' },
      apparmor: { profileType: 'Unconfined' },
      apparmorProfile: 'unconfined',
      selinuxOptions: { user: 'u', role: 'r', type: 'container_t', level: 's0:c3,c4' },
    },
  },
};

/** SELinuxOption: user 1, role 2, type 3, level 4. */
function selinuxFields(buf: Buffer): string[] {
  return [1, 2, 3, 4].map((n) => strings(buf, n)[0] ?? '');
}

describe('api.proto field numbers of the security fields (upstream cri-api v0.36.3)', () => {
  it('SELinuxOption (user 1, role 2, type 3, level 4) as LinuxContainerSecurityContext.selinux_options 4 and LinuxSandboxSecurityContext.selinux_options 2', () => {
    const container = criMethod('RuntimeService', 'CreateContainer').requestSerialize({ podSandboxId: 's', config: containerConfigToWire(config), sandboxConfig: podSandboxConfigToWire(sandbox) });
    assert.deepEqual(selinuxFields(sub(container, 2, 15, 2, 4)), ['u', 'r', 'container_t', 's0:c3,c4']);
    const run = criMethod('RuntimeService', 'RunPodSandbox').requestSerialize({ config: podSandboxConfigToWire(sandbox) });
    assert.deepEqual(selinuxFields(sub(run, 1, 8, 2, 2)), ['system_u', 'system_r', 'spc_t', 's0:c1,c2']);
  });

  it('LinuxContainerSecurityContext: run_as_user 5, run_as_username 6, apparmor_profile 9, masked_paths 13, readonly_paths 14, seccomp 15, apparmor 16', () => {
    const bytes = criMethod('RuntimeService', 'CreateContainer').requestSerialize({ podSandboxId: 's', config: containerConfigToWire(config), sandboxConfig: podSandboxConfigToWire(sandbox) });
    // CreateContainerRequest.config 2 → ContainerConfig.linux 15 → LinuxContainerConfig.security_context 2
    const sc = sub(bytes, 2, 15, 2);
    // uid 0 (root) is sent: the wrapper message is present, its value 0 (or left out, the proto3 default).
    assert.equal(varints(sub(sc, 5), 1)[0] ?? 0n, 0n);
    assert.deepEqual(strings(sc, 6), ['nobody']);
    assert.deepEqual(strings(sc, 9), ['unconfined']);
    assert.deepEqual(strings(sc, 13), ['/proc/kcore', '/proc/keys']);
    assert.deepEqual(strings(sc, 14), ['/proc/sys']);
    // SecurityProfile: profile_type 1 (RuntimeDefault 0, Unconfined 1, Localhost 2), localhost_ref 2
    assert.deepEqual(varints(sub(sc, 15), 1), [2n]);
    assert.deepEqual(strings(sub(sc, 15), 2), ['/var/lib/nodelet/seccomp/a.json']);
    assert.deepEqual(varints(sub(sc, 16), 1), [1n]);
  });

  it('NamespaceOption as LinuxContainerSecurityContext.namespace_options 3: network 1, pid 2 (TARGET 3), ipc 3, target_id 4', () => {
    const target: ContainerConfig = {
      ...config,
      linux: { securityContext: { ...config.linux?.securityContext, namespaceOptions: { network: 'NODE', pid: 'TARGET', ipc: 'POD', targetId: 'abc123' } } },
    };
    const bytes = criMethod('RuntimeService', 'CreateContainer').requestSerialize({ podSandboxId: 's', config: containerConfigToWire(target), sandboxConfig: podSandboxConfigToWire(sandbox) });
    const ns = sub(bytes, 2, 15, 2, 3);
    // NamespaceMode: POD 0 (the proto3 default: sent as 0 or left out), CONTAINER 1, NODE 2, TARGET 3.
    assert.deepEqual(varints(ns, 1), [2n]);
    assert.deepEqual(varints(ns, 2), [3n]);
    assert.equal(varints(ns, 3)[0] ?? 0n, 0n);
    assert.deepEqual(strings(ns, 4), ['abc123']);
  });

  it('NamespaceOption.userns_options 5 (v0.37.0): UserNamespace mode 1, uids 2 and gids 3 of IDMapping (host_id 1, container_id 2, length 3)', () => {
    const mapping = [{ hostId: 196608, containerId: 0, length: 65536 }];
    const userns: PodSandboxConfig = {
      ...sandbox,
      linux: { ...sandbox.linux, securityContext: { ...sandbox.linux?.securityContext, namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD', userNamespace: { mode: 'POD', uids: mapping, gids: [{ hostId: 262144, containerId: 0, length: 65536 }] } } } },
    };
    const bytes = criMethod('RuntimeService', 'RunPodSandbox').requestSerialize({ config: podSandboxConfigToWire(userns) });
    // PodSandboxConfig.linux 8 → security_context 2 → LinuxSandboxSecurityContext.namespace_options 1 → userns_options 5
    const options = sub(bytes, 1, 8, 2, 1, 5);
    assert.equal(varints(options, 1)[0] ?? 0n, 0n, 'mode POD (0)');
    const idMapping = (buf: Buffer): bigint[] => [1, 2, 3].map((n) => varints(buf, n)[0] ?? 0n);
    assert.deepEqual(idMapping(sub(options, 2)), [196608n, 0n, 65536n]);
    assert.deepEqual(idMapping(sub(options, 3)), [262144n, 0n, 65536n]);
  });

  it('StatusResponse (v0.37.0): runtime_handlers 3 (name 1, features 2: recursive_read_only_mounts 1, user_namespaces 2), features 4 (supplemental_groups_policy 1)', () => {
    const name = Buffer.from('runc');
    const handlerFeatures = Buffer.from([0x10, 0x01]);
    const handler = Buffer.concat([Buffer.from([0x0a, name.length]), name, Buffer.from([0x12, handlerFeatures.length]), handlerFeatures]);
    const runtimeFeatures = Buffer.from([0x08, 0x01]);
    const response = Buffer.concat([Buffer.from([0x1a, handler.length]), handler, Buffer.from([0x22, runtimeFeatures.length]), runtimeFeatures]);
    const decoded = criMethod('RuntimeService', 'Status').responseDeserialize(response) as {
      runtimeHandlers: { name: string; features: { recursiveReadOnlyMounts: boolean; userNamespaces: boolean } }[];
      features: { supplementalGroupsPolicy: boolean };
    };
    assert.deepEqual(decoded.runtimeHandlers, [{ name: 'runc', features: { recursiveReadOnlyMounts: false, userNamespaces: true } }]);
    assert.equal(decoded.features.supplementalGroupsPolicy, true);
  });

  it('Mount.uidMappings 6, gidMappings 7, recursive_read_only 8 (v0.37.0), as ContainerConfig.mounts 7', () => {
    const rro: ContainerConfig = { ...config, mounts: [{ containerPath: '/d', hostPath: '/h', readonly: true, recursiveReadOnly: true, uidMappings: [{ hostId: 65536, containerId: 0, length: 65536 }], gidMappings: [{ hostId: 131072, containerId: 0, length: 65536 }] }] };
    const bytes = criMethod('RuntimeService', 'CreateContainer').requestSerialize({ podSandboxId: 's', config: containerConfigToWire(rro), sandboxConfig: podSandboxConfigToWire(sandbox) });
    const mount = sub(bytes, 2, 7);
    assert.deepEqual(strings(mount, 1), ['/d']);
    assert.deepEqual(varints(mount, 3), [1n]);
    assert.deepEqual(varints(mount, 8), [1n]);
    assert.deepEqual(varints(sub(mount, 6), 1), [65536n], 'uidMappings host_id');
    assert.deepEqual(varints(sub(mount, 7), 1), [131072n], 'gidMappings host_id');
  });

  it('Mount.image 9, image_sub_path 10; ImageSpec.user_specified_image 18, runtime_handler 19 (v0.37.0)', () => {
    const image = { image: 'sha256:abc', userSpecifiedImage: 'example.test/data:1', runtimeHandler: 'runc' };
    const withImage: ContainerConfig = { ...config, mounts: [{ containerPath: '/v', hostPath: '', readonly: true, image, imageSubPath: 'etc' }] };
    const bytes = criMethod('RuntimeService', 'CreateContainer').requestSerialize({ podSandboxId: 's', config: containerConfigToWire(withImage), sandboxConfig: podSandboxConfigToWire(sandbox) });
    const mount = sub(bytes, 2, 7);
    assert.ok(strings(mount, 2).every((h) => h === ''), 'no host path');
    assert.deepEqual(strings(mount, 10), ['etc']);
    const spec = sub(mount, 9);
    assert.deepEqual(strings(spec, 1), ['sha256:abc']);
    assert.deepEqual(strings(spec, 18), ['example.test/data:1']);
    assert.deepEqual(strings(spec, 19), ['runc']);
  });

  it('LinuxSandboxSecurityContext: privileged 6, seccomp 9, apparmor 10', () => {
    const bytes = criMethod('RuntimeService', 'RunPodSandbox').requestSerialize({ config: podSandboxConfigToWire(sandbox) });
    // RunPodSandboxRequest.config 1 → PodSandboxConfig.linux 8 → LinuxPodSandboxConfig.security_context 2
    const sc = sub(bytes, 1, 8, 2);
    assert.deepEqual(varints(sc, 6), [1n]);
    assert.deepEqual(varints(sub(sc, 9), 1), [1n]);
    assert.deepEqual(varints(sub(sc, 10), 1), [2n]);
    assert.deepEqual(strings(sub(sc, 10), 2), ['prof']);
  });

  it('Image: uid 5 (Int64Value), username 6', () => {
    const method = criMethod('ImageService', 'ImageStatus');
    // Build the response bytes by hand with upstream's numbers and decode them with our proto.
    const int64Value = Buffer.from([0x08, 0xe8, 0x07]); // value 1 = 1000
    const image = Buffer.concat([Buffer.from([0x0a, 0x01]), Buffer.from('x'), Buffer.from([0x2a, int64Value.length]), int64Value, Buffer.from([0x32, 0x03]), Buffer.from('bob')]);
    const response = Buffer.concat([Buffer.from([0x0a, image.length]), image]);
    const decoded = method.responseDeserialize(response) as { image: { id: string; uid: { value: string } | null; username: string } };
    assert.equal(decoded.image.id, 'x');
    assert.deepEqual(decoded.image.uid, { value: '1000' });
    assert.equal(decoded.image.username, 'bob');
  });

  it('Image: pinned 8; ImageFsInfoResponse: image_filesystems 1 of FilesystemUsage (timestamp 1, fs_id 2, used_bytes 3, inodes_used 4)', () => {
    const pinned = Buffer.concat([Buffer.from([0x0a, 0x01]), Buffer.from('x'), Buffer.from([0x40, 0x01])]);
    const status = criMethod('ImageService', 'ImageStatus').responseDeserialize(Buffer.concat([Buffer.from([0x0a, pinned.length]), pinned])) as { image: { pinned: boolean } };
    assert.equal(status.image.pinned, true);
    const mount = Buffer.from('/m');
    const fsId = Buffer.concat([Buffer.from([0x0a, mount.length]), mount]);
    const usage = Buffer.concat([Buffer.from([0x08, 0x07, 0x12, fsId.length]), fsId, Buffer.from([0x1a, 0x02, 0x08, 0x2a, 0x22, 0x02, 0x08, 0x03])]);
    const response = Buffer.concat([Buffer.from([0x0a, usage.length]), usage]);
    const decoded = criMethod('ImageService', 'ImageFsInfo').responseDeserialize(response) as {
      imageFilesystems: { timestamp: string; fsId: { mountpoint: string }; usedBytes: { value: string }; inodesUsed: { value: string } }[];
    };
    assert.deepEqual(decoded.imageFilesystems, [{ timestamp: '7', fsId: { mountpoint: '/m' }, usedBytes: { value: '42' }, inodesUsed: { value: '3' } }]);
  });
});

/** The field numbers of the varint fields set to 1 in a message. */
function trueFields(buf: Buffer): number[] {
  return fields(buf).filter((f) => f.value === 1n).map((f) => f.field);
}

describe('api.proto field numbers of the streaming calls (upstream cri-api v0.36.3)', () => {
  it('ExecRequest: container_id 1, cmd 2, tty 3, stdin 4, stdout 5, stderr 6; the method is runtime.v1.RuntimeService/Exec', () => {
    const method = criMethod('RuntimeService', 'Exec');
    assert.equal(method.path, '/runtime.v1.RuntimeService/Exec');
    const bytes = method.requestSerialize({ containerId: 'c', cmd: ['sh', '-c'], tty: true, stdin: true, stdout: true, stderr: true });
    assert.deepEqual(strings(bytes, 1), ['c']);
    assert.deepEqual(strings(bytes, 2), ['sh', '-c']);
    assert.deepEqual(trueFields(bytes), [3, 4, 5, 6]);
    // One at a time, so that two swapped numbers cannot pass.
    assert.deepEqual(trueFields(method.requestSerialize({ containerId: 'c', cmd: [], tty: true })), [3]);
    assert.deepEqual(trueFields(method.requestSerialize({ containerId: 'c', cmd: [], stdin: true })), [4]);
    assert.deepEqual(trueFields(method.requestSerialize({ containerId: 'c', cmd: [], stdout: true })), [5]);
    assert.deepEqual(trueFields(method.requestSerialize({ containerId: 'c', cmd: [], stderr: true })), [6]);
  });

  it('AttachRequest: container_id 1, stdin 2, tty 3, stdout 4, stderr 5', () => {
    const method = criMethod('RuntimeService', 'Attach');
    assert.equal(method.path, '/runtime.v1.RuntimeService/Attach');
    assert.deepEqual(strings(method.requestSerialize({ containerId: 'c' }), 1), ['c']);
    assert.deepEqual(trueFields(method.requestSerialize({ containerId: 'c', stdin: true })), [2]);
    assert.deepEqual(trueFields(method.requestSerialize({ containerId: 'c', tty: true })), [3]);
    assert.deepEqual(trueFields(method.requestSerialize({ containerId: 'c', stdout: true })), [4]);
    assert.deepEqual(trueFields(method.requestSerialize({ containerId: 'c', stderr: true })), [5]);
  });

  it('PortForwardRequest: pod_sandbox_id 1, port 2 (repeated int32, packed); the responses carry url 1', () => {
    const method = criMethod('RuntimeService', 'PortForward');
    assert.equal(method.path, '/runtime.v1.RuntimeService/PortForward');
    const bytes = method.requestSerialize({ podSandboxId: 's', port: [80, 8080] });
    assert.deepEqual(strings(bytes, 1), ['s']);
    // Packed: one length-delimited field 2 holding the varints 80 and 8080 (0x50, 0x90 0x3f).
    const packed = fields(bytes).find((f) => f.field === 2)?.value;
    assert.deepEqual(packed, Buffer.from([0x50, 0x90, 0x3f]));
    for (const name of ['Exec', 'Attach', 'PortForward']) {
      const response = Buffer.concat([Buffer.from([0x0a, 0x03]), Buffer.from('u:1')]);
      assert.deepEqual(criMethod('RuntimeService', name).responseDeserialize(response), { url: 'u:1' }, name);
    }
  });

  it('ReopenContainerLogRequest: container_id 1, on /runtime.v1.RuntimeService/ReopenContainerLog', () => {
    const method = criMethod('RuntimeService', 'ReopenContainerLog');
    assert.equal(method.path, '/runtime.v1.RuntimeService/ReopenContainerLog');
    const bytes = method.requestSerialize({ containerId: 'c1' });
    assert.deepEqual(fields(bytes).map((f) => f.field), [1]);
    assert.deepEqual(strings(bytes, 1), ['c1']);
  });
});

describe('api.proto field numbers of ListContainerStats (upstream cri-api v0.36.3)', () => {
  it('ContainerStats: attributes 1 (id 1), cpu 2 (usage_core_nano_seconds 2, usage_nano_cores 3), memory 3 (working_set_bytes 2, usage_bytes 4, rss_bytes 5), writable_layer 4', () => {
    const method = criMethod('RuntimeService', 'ListContainerStats');
    assert.equal(method.path, '/runtime.v1.RuntimeService/ListContainerStats');
    const attributes = Buffer.concat([Buffer.from([0x0a, 0x01]), Buffer.from('c')]);
    const cpu = Buffer.from([0x08, 0x07, 0x12, 0x02, 0x08, 0x2a, 0x1a, 0x02, 0x08, 0x03]);
    const memory = Buffer.from([0x12, 0x02, 0x08, 0x05, 0x22, 0x02, 0x08, 0x06, 0x2a, 0x02, 0x08, 0x04]);
    const layer = Buffer.from([0x1a, 0x02, 0x08, 0x09]);
    const stats = Buffer.concat([Buffer.from([0x0a, attributes.length]), attributes, Buffer.from([0x12, cpu.length]), cpu, Buffer.from([0x1a, memory.length]), memory, Buffer.from([0x22, layer.length]), layer]);
    const decoded = method.responseDeserialize(Buffer.concat([Buffer.from([0x0a, stats.length]), stats])) as {
      stats: { attributes: { id: string }; cpu: { timestamp: string; usageCoreNanoSeconds: { value: string }; usageNanoCores: { value: string } }; memory: { workingSetBytes: { value: string }; usageBytes: { value: string }; rssBytes: { value: string } }; writableLayer: { usedBytes: { value: string } } }[];
    };
    const [s] = decoded.stats;
    assert.equal(s?.attributes.id, 'c');
    assert.equal(s?.cpu.timestamp, '7');
    assert.equal(s?.cpu.usageCoreNanoSeconds.value, '42');
    assert.equal(s?.cpu.usageNanoCores.value, '3');
    assert.equal(s?.memory.workingSetBytes.value, '5');
    assert.equal(s?.memory.usageBytes.value, '6');
    assert.equal(s?.memory.rssBytes.value, '4');
    assert.equal(s?.writableLayer.usedBytes.value, '9');
  });
});

describe('api.proto field numbers of in-place resize (upstream cri-api v0.36.3)', () => {
  it('UpdateContainerResourcesRequest: container_id 1, linux 2 (cpu_period 1, cpu_quota 2, cpu_shares 3, memory_limit_in_bytes 4); ContainerStatus.resources 16 (linux 1)', () => {
    const method = criMethod('RuntimeService', 'UpdateContainerResources');
    assert.equal(method.path, '/runtime.v1.RuntimeService/UpdateContainerResources');
    const bytes = method.requestSerialize({ containerId: 'c1', linux: linuxResourcesToWire({ cpuPeriod: 100000n, cpuQuota: 30000n, cpuShares: 204n, memoryLimitInBytes: 7n }) });
    assert.deepEqual(strings(bytes, 1), ['c1']);
    const linux = sub(bytes, 2);
    assert.deepEqual([1, 2, 3, 4].map((n) => varints(linux, n)[0]), [100000n, 30000n, 204n, 7n]);
    // ContainerStatusResponse.status 1 → ContainerStatus.resources 16 → ContainerResources.linux 1 → cpu_quota 2.
    const quota = Buffer.from([0x10, 0x05]);
    const resources = Buffer.concat([Buffer.from([0x0a, quota.length]), quota]);
    const status = Buffer.concat([Buffer.from([0x82, 0x01, resources.length]), resources]);
    const decoded = criMethod('RuntimeService', 'ContainerStatus').responseDeserialize(Buffer.concat([Buffer.from([0x0a, status.length]), status])) as { status: { resources: { linux: { cpuQuota: string } } } };
    assert.equal(decoded.status.resources.linux.cpuQuota, '5');
  });

  it('ContainerConfig (cri-api v0.37.2): devices 8 (Device container_path 1, host_path 2, permissions 3) and CDI_devices 17 (CDIDevice name 1)', () => {
    const withDevices: ContainerConfig = { ...config, devices: [{ containerPath: '/dev/x', hostPath: '/dev/null', permissions: 'rw' }], cdiDevices: ['example.com/resource=CDI-Dev-1'] };
    const bytes = criMethod('RuntimeService', 'CreateContainer').requestSerialize({ podSandboxId: 's', config: containerConfigToWire(withDevices), sandboxConfig: podSandboxConfigToWire(sandbox) });
    const device = sub(bytes, 2, 8);
    assert.deepEqual([strings(device, 1)[0], strings(device, 2)[0], strings(device, 3)[0]], ['/dev/x', '/dev/null', 'rw']);
    assert.deepEqual(strings(sub(bytes, 2, 17), 1), ['example.com/resource=CDI-Dev-1']);
  });
});
