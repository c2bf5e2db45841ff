/**
 * Hostile variants: termination message paths, resources, images, probes, commands, sysctls,
 * security contexts and odd pod-level fields. Every network-facing field points at loopback or
 * the pod itself: probes run from the node, and nothing may leave the machine.
 */
import { basePod, mainContainer, randomText, withContainer, withSpec } from './base.js';
import { ESCAPE_MARKER, type SpecContext, type VariantBuilder } from './types.js';

export const terminationPath: Record<string, VariantBuilder> = {
  'relative': (ctx) => withContainer(ctx, { terminationMessagePath: ctx.rng.pick(['relative/log', 'termination-log', '']) }),
  'dotdot': (ctx) => withContainer(ctx, { terminationMessagePath: `/dev/../../../tmp/${ESCAPE_MARKER}-${ctx.index}` }),
  'root-or-dir': (ctx) => withContainer(ctx, { terminationMessagePath: ctx.rng.pick(['/', '/tmp', '/dev', '/proc/self/status', '/etc/hosts', '/bin/sh', '/sys/kernel']) }),
  'very-long': (ctx) => withContainer(ctx, { terminationMessagePath: `/${randomText(ctx, ctx.rng.int(300, 5000))}` }),
  'unicode-and-spaces': (ctx) => withContainer(ctx, { terminationMessagePath: ctx.rng.pick(['/tmp/ü ß\u202e', '/tmp/a\nb', '/tmp/*?[]', '/tmp/$(HOME)']) }),
  'huge-message': (ctx) =>
    withContainer(ctx, {
      command: ['sh', '-c', `head -c ${ctx.rng.int(1, 5)}000000 /dev/zero | tr '\\0' m > /dev/termination-log; exit ${ctx.rng.int(0, 3)}`],
      terminationMessagePolicy: ctx.rng.pick(['File', 'FallbackToLogsOnError', 'Bogus']),
    }),
  'log-fallback-binary': (ctx) =>
    withContainer(ctx, { command: ['sh', '-c', 'head -c 100000 /dev/urandom; exit 7'], terminationMessagePolicy: 'FallbackToLogsOnError' }),
};

const QUANTITIES = ['1', '4Ki', '1m', '0', '1Ei', '9223372036854775807', '1e100', '-1', '0.0000001', '100000', '1.5', 'NaN'];

export const resources: Record<string, VariantBuilder> = {
  'huge-requests': (ctx) => withContainer(ctx, { resources: { requests: { cpu: ctx.rng.pick(['100000', '1e6', '8000']), memory: ctx.rng.pick(['1Ei', '1Pi', '900Ti']) } } }),
  'limits-below-requests': (ctx) => withContainer(ctx, { resources: { requests: { cpu: '2', memory: '1Gi' }, limits: { cpu: '1m', memory: '1Mi' } } }),
  'tiny-memory-limit': (ctx) => withContainer(ctx, { resources: { limits: { memory: ctx.rng.pick(['1', '4Ki', '1Mi', '4Mi']) } } }),
  'tiny-cpu-limit': (ctx) => withContainer(ctx, { resources: { limits: { cpu: ctx.rng.pick(['1m', '0.001', '1n']) } } }),
  'odd-quantities': (ctx) => withContainer(ctx, { resources: { limits: { [ctx.rng.pick(['cpu', 'memory', 'ephemeral-storage'])]: ctx.rng.pick(QUANTITIES) } } }),
  'unknown-resources': (ctx) =>
    withContainer(ctx, { resources: { requests: { [ctx.rng.pick(['example.com/gpu', 'nvidia.com/gpu', 'hugepages-2Mi', 'bogus', 'pods'])]: '1' }, limits: { 'example.com/gpu': '1' } } }),
  'oom-by-allocation': (ctx) =>
    withContainer(ctx, {
      command: ['sh', '-c', 'x=$(head -c 64000000 /dev/zero | tr "\\0" a); echo ${#x}'],
      resources: { limits: { memory: ctx.rng.pick(['8Mi', '16Mi']) } },
    }),
  'pod-level-resources': (ctx) => withSpec(ctx, { resources: { limits: { cpu: '1m', memory: '1Ki' } } }),
  'overhead-set': (ctx) => withSpec(ctx, { overhead: { cpu: '1000', memory: '1Ei' } }),
  'huge-ephemeral-storage': (ctx) => withContainer(ctx, { resources: { requests: { 'ephemeral-storage': '1Ei' } } }),
};

export const images: Record<string, VariantBuilder> = {
  'invalid-reference': (ctx) =>
    withContainer(ctx, { image: ctx.rng.pick(['Busybox:1.35', '////', 'busybox:', ':tag', 'busybox@sha256:deadbeef', 'büsybox', `${'a'.repeat(300)}:1`, 'a b', '../../etc/passwd', 'UPPER/case:1']) }),
  'unreachable-registry': (ctx) => withContainer(ctx, { image: ctx.rng.pick(['localhost:1/none:1', 'registry.example.invalid/x:1', 'docker.io/library/no-such-image:0']) }),
  'never-pull-absent': (ctx) => withContainer(ctx, { image: `example.invalid/absent-${ctx.index}:1`, imagePullPolicy: 'Never' }),
  'empty-or-space': (ctx) => withContainer(ctx, { image: ctx.rng.pick(['', ' ', ' busybox:1.35', 'busybox:1.35 ']) }),
  'bogus-pull-policy': (ctx) => withContainer(ctx, { imagePullPolicy: ctx.rng.pick(['Sometimes', '', 'always']) }),
  'missing-pull-secret': (ctx) => withSpec(ctx, { imagePullSecrets: [{ name: 'no-such-secret' }, { name: '' }] }),
  'digest-unknown': (ctx) => withContainer(ctx, { image: `busybox@sha256:${'0'.repeat(64)}` }),
};

function probe(ctx: SpecContext): Record<string, unknown> {
  const handler = ctx.rng.pick([
    { exec: { command: ['sh', '-c', ctx.rng.pick(['exit 1', 'sleep 100', 'true', ''])] } },
    { httpGet: { path: ctx.rng.pick(['/', '/../../etc', '\u0000', `/${'p'.repeat(5000)}`]), port: ctx.rng.pick([1, 65535, 0, 'named', 8080]) } },
    { tcpSocket: { port: ctx.rng.pick([1, 65535, 70000]) } },
    { grpc: { port: ctx.rng.pick([1, 0, 65536]), service: 'x' } },
    { httpGet: { host: '127.0.0.1', port: 1, httpHeaders: [{ name: 'X\nY', value: 'z' }] } },
    {},
  ]);
  return {
    ...handler,
    periodSeconds: ctx.rng.pick([1, 2147483647, 0, -1]),
    timeoutSeconds: ctx.rng.pick([0, 1, 2147483647]),
    failureThreshold: ctx.rng.pick([1, 2147483647, 0]),
    initialDelaySeconds: ctx.rng.pick([0, 2147483647]),
    successThreshold: ctx.rng.pick([1, 2, 0]),
    terminationGracePeriodSeconds: ctx.rng.pick([undefined, 0, 2147483647]),
  };
}

export const probes: Record<string, VariantBuilder> = {
  liveness: (ctx) => withContainer(ctx, { livenessProbe: probe(ctx) }),
  readiness: (ctx) => withContainer(ctx, { readinessProbe: probe(ctx) }),
  startup: (ctx) => withContainer(ctx, { startupProbe: probe(ctx) }),
  'all-three': (ctx) => withContainer(ctx, { livenessProbe: probe(ctx), readinessProbe: probe(ctx), startupProbe: probe(ctx) }),
  'hooks-hostile': (ctx) =>
    withContainer(ctx, {
      lifecycle: {
        postStart: ctx.rng.pick([{ exec: { command: ['sh', '-c', 'exit 3'] } }, { httpGet: { host: '127.0.0.1', port: 1 } }, { sleep: { seconds: ctx.rng.pick([0, -1, 2147483647]) } }]),
        preStop: ctx.rng.pick([{ exec: { command: ['/no/such/binary'] } }, { tcpSocket: { port: 1 } }]),
      },
    }),
};

export const commands: Record<string, VariantBuilder> = {
  'missing-binary': (ctx) => withContainer(ctx, { command: [ctx.rng.pick(['/no/such/binary', 'nosuchcmd', '', '/etc', '/dev/null'])] }),
  'huge-args': (ctx) => withContainer(ctx, { command: ['sh', '-c', 'exit 0', ...Array.from({ length: ctx.rng.int(10, 40) }, () => 'a'.repeat(100 * 1024))] }),
  'many-args': (ctx) => withContainer(ctx, { command: ['true'], args: Array.from({ length: ctx.rng.int(5000, 30000) }, (_, i) => String(i)) }),
  'exit-codes': (ctx) => withContainer(ctx, { command: ['sh', '-c', `exit ${ctx.rng.pick([1, 2, 126, 127, 128, 137, 143, 255])}`] }),
  'self-kill': (ctx) => withContainer(ctx, { command: ['sh', '-c', `kill -${ctx.rng.pick(['KILL', 'SEGV', 'ABRT', 'TERM'])} $$`] }),
  'ignores-sigterm': (ctx) => withContainer(ctx, { command: ['sh', '-c', "trap '' TERM INT; while true; do sleep 1; done"] }),
  'noisy-log': (ctx) => withContainer(ctx, { command: ['sh', '-c', `head -c ${ctx.rng.int(1, 3)}000000 /dev/urandom | base64; sleep 3600`] }),
  'escape-sequences': (ctx) => withContainer(ctx, { command: ['sh', '-c', 'printf "\\033[2J\\r\\000\\377 partial line without newline"; sleep 3600'] }),
  'expansion-in-command': (ctx) => withContainer(ctx, { command: ['sh', '-c', '$(X)$(Y)'], env: [{ name: 'X', value: 'exit ' }, { name: 'Y', value: '$(X)' }] }),
  'working-dir': (ctx) => withContainer(ctx, { workingDir: ctx.rng.pick(['relative', `/nonexistent/${ESCAPE_MARKER}-wd-${ctx.index}`, '/proc/1', '/dev/null']) }),
  'stdin-tty': (ctx) => withContainer(ctx, { stdin: true, stdinOnce: ctx.rng.chance(0.5), tty: ctx.rng.chance(0.5), command: ['sh'] }),
};

export const sysctls: Record<string, VariantBuilder> = {
  'unsafe-not-allowed': (ctx) => withSpec(ctx, { securityContext: { sysctls: [{ name: ctx.rng.pick(['kernel.msgmax', 'kernel.sem', 'vm.swappiness', 'net.core.somaxconn']), value: '10' }] } }),
  'allowed-unsafe': (ctx) => withSpec(ctx, { securityContext: { sysctls: [{ name: 'kernel.msgmnb', value: ctx.rng.pick(['65536', '-1', 'abc', '99999999999999999999']) }] } }),
  'invalid-name': (ctx) => withSpec(ctx, { securityContext: { sysctls: [{ name: ctx.rng.pick(['no_dots', '../../etc', 'kernel..x', 'a'.repeat(300)]), value: '1' }] } }),
  'safe-odd-value': (ctx) =>
    withSpec(ctx, { securityContext: { sysctls: [{ name: ctx.rng.pick(['net.ipv4.ip_local_port_range', 'kernel.shm_rmid_forced', 'net.ipv4.ping_group_range']), value: ctx.rng.pick(['1 0', 'x', '', '0 2147483647']) }] } }),
  'net-with-host-network': (ctx) => withSpec(ctx, { hostNetwork: true, securityContext: { sysctls: [{ name: 'net.ipv4.ping_group_range', value: '1 0' }] } }),
  'duplicate': (ctx) => withSpec(ctx, { securityContext: { sysctls: [{ name: 'kernel.shm_rmid_forced', value: '1' }, { name: 'kernel.shm_rmid_forced', value: '0' }] } }),
};

export const security: Record<string, VariantBuilder> = {
  'huge-run-as-user': (ctx) => withContainer(ctx, { securityContext: { runAsUser: ctx.rng.pick([2147483647, 4294967295, -1, 65534]), runAsGroup: ctx.rng.pick([2147483647, 0, -5]) } }),
  'non-root-with-root-image': (ctx) => withContainer(ctx, { securityContext: { runAsNonRoot: true } }),
  'non-root-with-uid-0': (ctx) => withContainer(ctx, { securityContext: { runAsNonRoot: true, runAsUser: 0 } }),
  'bogus-capabilities': (ctx) => withContainer(ctx, { securityContext: { capabilities: { add: [ctx.rng.pick(['NOT_A_CAP', 'CAP_CAP_X', 'ALL', ''])], drop: ['all'] } } }),
  'privileged-contradiction': (ctx) => withContainer(ctx, { securityContext: { privileged: true, allowPrivilegeEscalation: false } }),
  'seccomp-missing-localhost': (ctx) => withContainer(ctx, { securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: `../../${ESCAPE_MARKER}-${ctx.index}.json` } } }),
  'apparmor-missing': (ctx) => withContainer(ctx, { securityContext: { appArmorProfile: { type: 'Localhost', localhostProfile: 'no-such-profile' } } }),
  'proc-mount-unmasked': (ctx) => withContainer(ctx, { securityContext: { procMount: 'Unmasked' } }),
  'read-only-root-writes': (ctx) => withContainer(ctx, { command: ['sh', '-c', 'echo x > /x || exit 9'], securityContext: { readOnlyRootFilesystem: true } }),
  'supplemental-groups': (ctx) => withSpec(ctx, { securityContext: { supplementalGroups: Array.from({ length: ctx.rng.int(1, 70000) }, (_, i) => i), fsGroup: 2147483647, fsGroupChangePolicy: ctx.rng.pick(['Always', 'Nope']) } }),
  'selinux-odd': (ctx) => withContainer(ctx, { securityContext: { seLinuxOptions: { level: 's0:c1,c2', type: 'no_such_t', user: 'x', role: 'y' } } }),
  'windows-options': (ctx) => withSpec(ctx, { securityContext: { windowsOptions: { runAsUserName: 'ContainerAdministrator', hostProcess: true } } }),
};

export const podMisc: Record<string, VariantBuilder> = {
  'deadline-1s': (ctx) => withSpec(ctx, { activeDeadlineSeconds: ctx.rng.pick([1, 0, -1]) }),
  'node-selector-mismatch': (ctx) => withSpec(ctx, { nodeSelector: { 'no-such-label': randomText(ctx, 8) } }),
  'affinity-mismatch': (ctx) =>
    withSpec(ctx, { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/os', operator: 'In', values: ['plan9'] }] }] } } } }),
  'os-windows': (ctx) => withSpec(ctx, { os: { name: ctx.rng.pick(['windows', 'plan9']) } }),
  'dns-none-without-config': (ctx) => withSpec(ctx, { dnsPolicy: 'None' }),
  'dns-config-huge': (ctx) =>
    withSpec(ctx, {
      dnsPolicy: 'None',
      dnsConfig: { nameservers: ['127.0.0.1'], searches: Array.from({ length: ctx.rng.int(5, 40) }, () => randomText(ctx, 60)), options: [{ name: 'ndots', value: '99999' }] },
    }),
  'host-aliases-odd': (ctx) => withSpec(ctx, { hostAliases: [{ ip: ctx.rng.pick(['127.0.0.1', '::1', 'not-an-ip', '999.1.1.1']), hostnames: ['ü.example', 'a b', '#comment'] }] }),
  'huge-grace': (ctx) => withSpec(ctx, { terminationGracePeriodSeconds: ctx.rng.pick([2 ** 63, -1, 0]) }),
  'many-containers': (ctx) => {
    const pod = basePod(ctx);
    pod.spec.containers = Array.from({ length: ctx.rng.int(10, 40) }, (_, i) => ({ ...mainContainer(pod), name: `c${i}` }));
    return pod;
  },
  'failing-init': (ctx) => withSpec(ctx, { initContainers: [{ name: 'init', image: 'busybox:1.35', command: ['sh', '-c', 'exit 42'] }] }),
  'host-port-clash': (ctx) => withContainer(ctx, { ports: [{ containerPort: 80, hostPort: ctx.rng.pick([1, 65535, 0, 70000]), protocol: ctx.rng.pick(['TCP', 'SCTP', 'ICMP']) }] }),
  'priority-bogus': (ctx) => withSpec(ctx, { priorityClassName: ctx.rng.pick(['no-such-class', 'system-node-critical']), priority: 2000000000 }),
  'readiness-gate': (ctx) => withSpec(ctx, { readinessGates: [{ conditionType: ctx.rng.pick(['example.com/never', 'Ready', 'bad type!']) }] }),
  'runtime-class-missing': (ctx) => withSpec(ctx, { runtimeClassName: `no-such-${ctx.index}` }),
  'share-pid-and-host-ipc': (ctx) => withSpec(ctx, { shareProcessNamespace: true, hostIPC: ctx.rng.chance(0.5), hostPID: ctx.rng.chance(0.5) }),
};
