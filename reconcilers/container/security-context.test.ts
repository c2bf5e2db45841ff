/**
 * The container security context as the kubelet builds it: one named case per pod mutation, the
 * fields of the CRI context expected. Plain data.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import {
  DEFAULT_MASKED_PATHS,
  DEFAULT_READONLY_PATHS,
  containerSecurityContext,
  hasPrivilegedContainer,
  hostMaskedPaths,
  imageUserOf,
  isInvalidSecurityProfileError,
  parseCpuList,
  verifyRunAsNonRoot,
  type ContainerSecuritySettings,
  type ImageUser,
} from './security-context.js';

const settings: ContainerSecuritySettings = { seccompProfileRoot: '/var/lib/nodelet/seccomp', seccompDefault: false, maskedPaths: DEFAULT_MASKED_PATHS };
const ROOT: ImageUser = { uid: 0n };

function pod(mutate: (p: V1Pod & { spec: NonNullable<V1Pod['spec']> }, c: V1Container) => void = () => undefined): { pod: V1Pod; container: V1Container } {
  const container: V1Container = { name: 'app', image: 'busybox:1.35' };
  const p = { metadata: { name: 'web', namespace: 'default', uid: 'uid-1' }, spec: { containers: [container] } };
  mutate(p, container);
  return { pod: p, container };
}

function sc(mutate?: Parameters<typeof pod>[0], options: { imageUser?: ImageUser; settings?: ContainerSecuritySettings } = {}): ReturnType<typeof containerSecurityContext> {
  const { pod: p, container } = pod(mutate);
  return containerSecurityContext({ pod: p, container, settings: options.settings ?? settings, imageUser: options.imageUser ?? ROOT });
}

describe('containerSecurityContext', () => {
  it('sends the default masked and read-only paths, Unconfined seccomp and the image user for a bare container', () => {
    assert.deepEqual(sc(), {
      privileged: false,
      runAsUser: 0n,
      supplementalGroups: [],
      readonlyRootfs: false,
      noNewPrivs: false,
      capabilities: { addCapabilities: [], dropCapabilities: [] },
      maskedPaths: [...DEFAULT_MASKED_PATHS],
      readonlyPaths: [...DEFAULT_READONLY_PATHS],
      seccomp: { profileType: 'Unconfined' },
    });
  });

  const cases: { name: string; mutate: Parameters<typeof pod>[0]; imageUser?: ImageUser; settings?: ContainerSecuritySettings; expect: Partial<ReturnType<typeof containerSecurityContext>> }[] = [
    { name: 'procMount Unmasked sends no masked and no read-only paths', mutate: (_, c) => (c.securityContext = { procMount: 'Unmasked' }), expect: { maskedPaths: [], readonlyPaths: [] } },
    { name: 'procMount Default keeps them', mutate: (_, c) => (c.securityContext = { procMount: 'Default' }), expect: { maskedPaths: [...DEFAULT_MASKED_PATHS], readonlyPaths: [...DEFAULT_READONLY_PATHS] } },
    { name: 'the host’s masked paths (thermal_throttle) are sent as given', mutate: () => undefined, settings: { ...settings, maskedPaths: ['/a', '/b'] }, expect: { maskedPaths: ['/a', '/b'] } },
    { name: 'pod seccomp RuntimeDefault', mutate: (p) => (p.spec.securityContext = { seccompProfile: { type: 'RuntimeDefault' } }), expect: { seccomp: { profileType: 'RuntimeDefault' } } },
    { name: 'container seccomp Unconfined overrides the pod’s RuntimeDefault', mutate: (p, c) => { p.spec.securityContext = { seccompProfile: { type: 'RuntimeDefault' } }; c.securityContext = { seccompProfile: { type: 'Unconfined' } }; }, expect: { seccomp: { profileType: 'Unconfined' } } },
    { name: 'Localhost seccomp is a path under the profile root', mutate: (_, c) => (c.securityContext = { seccompProfile: { type: 'Localhost', localhostProfile: 'profiles/audit.json' } }), expect: { seccomp: { profileType: 'Localhost', localhostRef: '/var/lib/nodelet/seccomp/profiles/audit.json' } } },
    { name: 'seccompDefault makes RuntimeDefault the default', mutate: () => undefined, settings: { ...settings, seccompDefault: true }, expect: { seccomp: { profileType: 'RuntimeDefault' } } },
    { name: 'AppArmor RuntimeDefault from the container field', mutate: (_, c) => (c.securityContext = { appArmorProfile: { type: 'RuntimeDefault' } }), expect: { apparmor: { profileType: 'RuntimeDefault' }, apparmorProfile: 'runtime/default' } },
    { name: 'AppArmor Localhost from the legacy annotation', mutate: (p) => (p.metadata = { ...p.metadata, annotations: { 'container.apparmor.security.beta.kubernetes.io/app': 'localhost/k8s-deny' } }), expect: { apparmor: { profileType: 'Localhost', localhostRef: 'k8s-deny' }, apparmorProfile: 'localhost/k8s-deny' } },
    { name: 'AppArmor: the annotation wins over the pod field', mutate: (p) => { p.metadata = { ...p.metadata, annotations: { 'container.apparmor.security.beta.kubernetes.io/app': 'unconfined' } }; p.spec.securityContext = { appArmorProfile: { type: 'RuntimeDefault' } }; }, expect: { apparmor: { profileType: 'Unconfined' }, apparmorProfile: 'unconfined' } },
    { name: 'AppArmor from the pod field', mutate: (p) => (p.spec.securityContext = { appArmorProfile: { type: 'Localhost', localhostProfile: 'p1' } }), expect: { apparmor: { profileType: 'Localhost', localhostRef: 'p1' }, apparmorProfile: 'localhost/p1' } },
    { name: 'pod runAsUser/runAsGroup, container runAsUser wins', mutate: (p, c) => { p.spec.securityContext = { runAsUser: 1000, runAsGroup: 2000 }; c.securityContext = { runAsUser: 1001 }; }, expect: { runAsUser: 1001n, runAsGroup: 2000n } },
    { name: 'a numeric image user is sent as run_as_user', mutate: () => undefined, imageUser: { uid: 65534n }, expect: { runAsUser: 65534n } },
    { name: 'a named image user is sent as run_as_username', mutate: () => undefined, imageUser: { username: 'nobody' }, expect: { runAsUsername: 'nobody' } },
    { name: 'the spec’s runAsUser wins over the image user', mutate: (p) => (p.spec.securityContext = { runAsUser: 7 }), imageUser: { username: 'nobody' }, expect: { runAsUser: 7n } },
    { name: 'fsGroup comes before the supplemental groups', mutate: (p) => (p.spec.securityContext = { fsGroup: 2000, supplementalGroups: [3000, 3001] }), expect: { supplementalGroups: [2000n, 3000n, 3001n] } },
    { name: 'supplementalGroupsPolicy Strict is sent as set', mutate: (p) => (p.spec.securityContext = { supplementalGroups: [3000], supplementalGroupsPolicy: 'Strict' }), expect: { supplementalGroups: [3000n], supplementalGroupsPolicy: 'Strict' } },
    { name: 'no supplementalGroupsPolicy: none sent (the runtime merges)', mutate: () => undefined, expect: { supplementalGroupsPolicy: undefined } },
    { name: 'allowPrivilegeEscalation false sets no_new_privs', mutate: (_, c) => (c.securityContext = { allowPrivilegeEscalation: false }), expect: { noNewPrivs: true } },
    { name: 'privileged, read-only root and capabilities', mutate: (_, c) => (c.securityContext = { privileged: true, readOnlyRootFilesystem: true, capabilities: { add: ['NET_ADMIN'], drop: ['ALL'] } }), expect: { privileged: true, readonlyRootfs: true, capabilities: { addCapabilities: ['NET_ADMIN'], dropCapabilities: ['ALL'] } } },
  ];

  for (const c of cases) {
    it(c.name, () => {
      const got = sc(c.mutate, { ...(c.imageUser === undefined ? {} : { imageUser: c.imageUser }), ...(c.settings === undefined ? {} : { settings: c.settings }) });
      const picked = Object.fromEntries(Object.keys(c.expect).map((k) => [k, got[k as keyof typeof got]]));
      assert.deepEqual(picked, c.expect);
      if (!('runAsUsername' in c.expect)) assert.equal(got.runAsUsername, undefined, 'no user name unless the image names one');
    });
  }

  it('refuses a Localhost seccomp profile without a name', () => {
    assert.throws(() => sc((_, c) => (c.securityContext = { seccompProfile: { type: 'Localhost' } })), isInvalidSecurityProfileError);
  });

  it('does not let a Localhost profile escape the profile root by ".."', () => {
    const got = sc((_, c) => (c.securityContext = { seccompProfile: { type: 'Localhost', localhostProfile: '../x.json' } }));
    assert.deepEqual(got.seccomp, { profileType: 'Localhost', localhostRef: '/var/lib/nodelet/x.json' }, "Go's filepath.Join, as the kubelet (it does not confine either)");
  });
});

describe('verifyRunAsNonRoot', () => {
  const where = '(pod: "web_default(uid-1)", container: app)';
  const cases: { name: string; mutate: Parameters<typeof pod>[0]; user: ImageUser; expect: string | undefined }[] = [
    { name: 'no runAsNonRoot: anything goes', mutate: () => undefined, user: ROOT, expect: undefined },
    { name: 'runAsNonRoot false: root is fine', mutate: (p) => (p.spec.securityContext = { runAsNonRoot: false }), user: ROOT, expect: undefined },
    { name: 'image runs as root', mutate: (p) => (p.spec.securityContext = { runAsNonRoot: true }), user: ROOT, expect: `container has runAsNonRoot and image will run as root ${where}` },
    { name: 'image names a user', mutate: (_, c) => (c.securityContext = { runAsNonRoot: true }), user: { username: 'nobody' }, expect: `container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root ${where}` },
    { name: 'image runs as 1000', mutate: (p) => (p.spec.securityContext = { runAsNonRoot: true }), user: { uid: 1000n }, expect: undefined },
    { name: 'runAsUser 0 breaks the policy', mutate: (p, c) => { p.spec.securityContext = { runAsNonRoot: true }; c.securityContext = { runAsUser: 0 }; }, user: { uid: 1000n }, expect: `container's runAsUser breaks non-root policy ${where}` },
    { name: 'runAsUser 1000 over a root image', mutate: (p) => (p.spec.securityContext = { runAsNonRoot: true, runAsUser: 1000 }), user: ROOT, expect: undefined },
    { name: 'container runAsNonRoot false overrides the pod', mutate: (p, c) => { p.spec.securityContext = { runAsNonRoot: true }; c.securityContext = { runAsNonRoot: false }; }, user: ROOT, expect: undefined },
    { name: 'an out-of-range image uid', mutate: (p) => (p.spec.securityContext = { runAsNonRoot: true }), user: { uid: 4294967296n }, expect: `container has runAsNonRoot and image has an invalid user id (4294967296). (Must be 1-(2147483647)): must be between 0 and 2147483647, inclusive ${where}` },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const { pod: p, container } = pod(c.mutate);
      assert.equal(verifyRunAsNonRoot(p, container, c.user), c.expect);
    });
  }
});

describe('image user, host masked paths, privileged sandbox', () => {
  it('reads the image user as the kubelet: uid, else name, else root', () => {
    assert.deepEqual(imageUserOf({ id: 'x', repoTags: [], repoDigests: [], size: 0n, uid: 1000n, username: '' }), { uid: 1000n });
    assert.deepEqual(imageUserOf({ id: 'x', repoTags: [], repoDigests: [], size: 0n, uid: 0n }), { uid: 0n });
    assert.deepEqual(imageUserOf({ id: 'x', repoTags: [], repoDigests: [], size: 0n, username: 'nobody' }), { username: 'nobody' });
    assert.deepEqual(imageUserOf({ id: 'x', repoTags: [], repoDigests: [], size: 0n, username: '' }), { uid: 0n });
    assert.deepEqual(imageUserOf(undefined), { uid: 0n });
  });

  it("adds each possible CPU's thermal_throttle that exists", () => {
    assert.deepEqual(parseCpuList('0-2,4\n'), [0, 1, 2, 4]);
    assert.equal(parseCpuList('junk'), undefined);
    const paths = hostMaskedPaths([0, 1], (p) => p === '/sys/devices/system/cpu/cpu1/thermal_throttle');
    assert.deepEqual(paths, [...DEFAULT_MASKED_PATHS, '/sys/devices/system/cpu/cpu1/thermal_throttle']);
  });

  it('makes the sandbox privileged when any container (init included) is', () => {
    assert.equal(hasPrivilegedContainer(pod().pod), false);
    assert.equal(hasPrivilegedContainer(pod((p) => (p.spec.initContainers = [{ name: 'i', securityContext: { privileged: true } }])).pod), true);
  });
});
