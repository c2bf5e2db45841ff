/** Hostile variants: huge environments, volume trees, names, and path traversal. */
import { basePod, mainContainer, randomText, withContainer, withSpec } from './base.js';
import { ESCAPE_MARKER, FIXTURE_CONFIGMAP, FIXTURE_KEYS, FIXTURE_SECRET, type SpecContext, type VariantBuilder } from './types.js';

const KiB = 1024;

function envVars(count: number, valueLength: (i: number) => number, ctx: SpecContext): { name: string; value: string }[] {
  const seed = randomText(ctx, 8);
  return Array.from({ length: count }, (_, i) => ({ name: `V_${i}`, value: `${seed}${'x'.repeat(Math.max(0, valueLength(i) - seed.length))}` }));
}

/** `$(A<i-1>)$(A<i-1>)`: each variable doubles the previous one, a 2^levels expansion. */
function expansionBomb(levels: number): { name: string; value: string }[] {
  return [{ name: 'A0', value: 'xy' }, ...Array.from({ length: levels }, (_, i) => ({ name: `A${i + 1}`, value: `$(A${i})$(A${i})` }))];
}

export const hugeEnv: Record<string, VariantBuilder> = {
  'many-vars': (ctx) => withContainer(ctx, { env: envVars(ctx.rng.int(1000, 5000), () => 16, ctx) }),
  'value-over-exec-limit': (ctx) => withContainer(ctx, { env: envVars(1, () => ctx.rng.int(129, 400) * KiB, ctx) }),
  'near-object-limit': (ctx) => withContainer(ctx, { env: envVars(ctx.rng.int(10, 14), () => 100 * KiB, ctx) }),
  'over-object-limit': (ctx) => withContainer(ctx, { env: envVars(ctx.rng.int(17, 24), () => 100 * KiB, ctx) }),
  'expansion-bomb': (ctx) => withContainer(ctx, { env: expansionBomb(ctx.rng.int(16, 22)) }),
  'odd-names': (ctx) => withContainer(ctx, { env: [{ name: ctx.rng.pick(['1LEADING_DIGIT', 'with space', 'dash-ed.dot', 'ÜNICODE', 'a=b', '']), value: 'v' }] }),
  'unicode-values': (ctx) => withContainer(ctx, { env: [{ name: 'U', value: '\u202e\u0000\ud83d\ude00'.repeat(ctx.rng.int(1, 2000)) }] }),
  'dangling-refs': (ctx) => withContainer(ctx, { env: [{ name: 'R', value: '$(NOPE)$$(ESC)$(' }, { name: 'S', value: '$(R)$(R)' }] }),
  'missing-configmap-key': (ctx) =>
    withContainer(ctx, { env: [{ name: 'M', valueFrom: { configMapKeyRef: { name: FIXTURE_CONFIGMAP, key: 'missing-key' } } }] }),
  'envfrom-missing': (ctx) => withContainer(ctx, { envFrom: [{ prefix: '$(weird)-', secretRef: { name: 'no-such-secret' } }] }),
  'bad-field-ref': (ctx) => withContainer(ctx, { env: [{ name: 'F', valueFrom: { fieldRef: { fieldPath: ctx.rng.pick(['metadata.nope', 'spec.nodeName', "metadata.annotations['x']"]) } } }] }),
  'resource-ref-other-container': (ctx) =>
    withContainer(ctx, { env: [{ name: 'L', valueFrom: { resourceFieldRef: { containerName: 'ghost', resource: 'limits.memory' } } }] }),
};

function deepPath(ctx: SpecContext, depth: number): string {
  return Array.from({ length: depth }, () => randomText(ctx, ctx.rng.int(1, 12))).join('/');
}

function emptyDirs(count: number): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => ({ name: `v${i}`, emptyDir: {} }));
}

export const volumes: Record<string, VariantBuilder> = {
  'many-emptydirs': (ctx) => {
    const count = ctx.rng.int(50, 300);
    const pod = withSpec(ctx, { volumes: emptyDirs(count) });
    mainContainer(pod).volumeMounts = Array.from({ length: count }, (_, i) => ({ name: `v${i}`, mountPath: `/m/${i}` }));
    return pod;
  },
  'deep-subpath': (ctx) => {
    const pod = withSpec(ctx, { volumes: emptyDirs(1) });
    mainContainer(pod).volumeMounts = [{ name: 'v0', mountPath: '/deep', subPath: deepPath(ctx, ctx.rng.int(20, 600)) }];
    return pod;
  },
  'deep-mount-path': (ctx) => {
    const pod = withSpec(ctx, { volumes: emptyDirs(1) });
    mainContainer(pod).volumeMounts = [{ name: 'v0', mountPath: `/${deepPath(ctx, ctx.rng.int(50, 900))}` }];
    return pod;
  },
  'one-volume-many-subpaths': (ctx) => {
    const count = ctx.rng.int(20, 120);
    const pod = withSpec(ctx, { volumes: emptyDirs(1) });
    mainContainer(pod).volumeMounts = Array.from({ length: count }, (_, i) => ({ name: 'v0', mountPath: `/s/${i}`, subPath: `${deepPath(ctx, 3)}/${i}` }));
    return pod;
  },
  'configmap-nested-items': (ctx) => {
    const items = FIXTURE_KEYS.map((key) => ({ key, path: ctx.rng.pick([deepPath(ctx, 8), `${key}/../${key}2`, `..${key}`, `/${key}`, `${key}/./x`]) }));
    const pod = withSpec(ctx, { volumes: [{ name: 'cm', configMap: { name: FIXTURE_CONFIGMAP, items, defaultMode: ctx.rng.pick([0o777, 0o7777, 0, 0o644]) } }] });
    mainContainer(pod).volumeMounts = [{ name: 'cm', mountPath: '/cm' }];
    return pod;
  },
  'secret-missing-key': (ctx) => {
    const pod = withSpec(ctx, { volumes: [{ name: 's', secret: { secretName: FIXTURE_SECRET, items: [{ key: 'absent', path: 'x/y/z' }] } }] });
    mainContainer(pod).volumeMounts = [{ name: 's', mountPath: '/s' }];
    return pod;
  },
  'missing-configmap': (ctx) => {
    const pod = withSpec(ctx, { volumes: [{ name: 'cm', configMap: { name: `absent-${ctx.index}` } }] });
    mainContainer(pod).volumeMounts = [{ name: 'cm', mountPath: '/cm' }];
    return pod;
  },
  'mount-of-undeclared-volume': (ctx) => withContainer(ctx, { volumeMounts: [{ name: 'ghost', mountPath: '/ghost' }] }),
  'same-mount-path-twice': (ctx) => {
    const pod = withSpec(ctx, { volumes: emptyDirs(2) });
    mainContainer(pod).volumeMounts = [{ name: 'v0', mountPath: '/same' }, { name: 'v1', mountPath: '/same/' }];
    return pod;
  },
  'mount-over-proc': (ctx) => {
    const pod = withSpec(ctx, { volumes: emptyDirs(1) });
    mainContainer(pod).volumeMounts = [{ name: 'v0', mountPath: ctx.rng.pick(['/proc', '/dev', '/sys', '/', '/dev/termination-log', '/etc/hosts']) }];
    return pod;
  },
  'emptydir-absurd-size': (ctx) => {
    const pod = withSpec(ctx, { volumes: [{ name: 'v0', emptyDir: { medium: ctx.rng.pick(['Memory', '', 'HugePages']), sizeLimit: ctx.rng.pick(['1', '1Ei', '0', '-1']) } }] });
    mainContainer(pod).volumeMounts = [{ name: 'v0', mountPath: '/e' }];
    return pod;
  },
  'hostpath-missing-typed': (ctx) => {
    const type = ctx.rng.pick(['Directory', 'File', 'Socket', 'CharDevice', 'BlockDevice']);
    const pod = withSpec(ctx, { volumes: [{ name: 'hp', hostPath: { path: `/nonexistent/${ESCAPE_MARKER}-hp-${ctx.index}`, type } }] });
    mainContainer(pod).volumeMounts = [{ name: 'hp', mountPath: '/hp', readOnly: true }];
    return pod;
  },
};

const INVALID_NAMES = ['UPPER', 'under_score', '-leading', 'trailing-', 'a..b', '..', '.', 'a/b', 'ünïcode', 'x'.repeat(254), '', 'sp ace', 'new\nline'];

export const names: Record<string, VariantBuilder> = {
  'invalid-pod-name': (ctx) => basePod(ctx, ctx.rng.pick(INVALID_NAMES)),
  'longest-valid-name': (ctx) => basePod(ctx, `h${ctx.index}-${'a'.repeat(240)}`.slice(0, 253)),
  'dotted-name': (ctx) => basePod(ctx, `h${ctx.index}.${ctx.rng.pick(['a.b.c', 'x-y.z', '0.0.0'])}`),
  'invalid-container-name': (ctx) => withContainer(ctx, { name: ctx.rng.pick(INVALID_NAMES) }),
  'duplicate-container-names': (ctx) => {
    const pod = basePod(ctx);
    pod.spec.containers = [mainContainer(pod), { ...mainContainer(pod) }];
    return pod;
  },
  'unicode-labels-annotations': (ctx) => {
    const pod = basePod(ctx);
    pod.metadata.labels = { ...(pod.metadata.labels as object), [ctx.rng.pick(['ü', 'ok', 'a/b/c'])]: ctx.rng.pick(['ü', 'v', '']) };
    pod.metadata.annotations = { 'ü/ß': '\u202e'.repeat(100), big: 'z'.repeat(ctx.rng.int(1000, 300 * KiB)) };
    return pod;
  },
  'long-generate-name': (ctx) => {
    const pod = basePod(ctx);
    delete pod.metadata.name;
    pod.metadata.generateName = `h${ctx.index}-${'g'.repeat(ctx.rng.int(50, 300))}`;
    return pod;
  },
  'hostname-subdomain': (ctx) => withSpec(ctx, { hostname: ctx.rng.pick(INVALID_NAMES.concat(['a'.repeat(63)])), subdomain: ctx.rng.pick(['ok', 'UP', 'a'.repeat(64)]) }),
};

/** A relative path climbing `depth` levels, to the marker. */
function climb(ctx: SpecContext, depth: number): string {
  return `${'../'.repeat(depth)}tmp/${ESCAPE_MARKER}-${ctx.index}`;
}

function traversalPod(ctx: SpecContext, mount: Record<string, unknown>, env: Record<string, unknown>[] = []): ReturnType<VariantBuilder> {
  const pod = withSpec(ctx, { volumes: emptyDirs(1) });
  Object.assign(mainContainer(pod), { env, volumeMounts: [{ name: 'v0', mountPath: '/t', ...mount }] });
  return pod;
}

/** An init container plants a symlink to `/` in the emptyDir; the main container mounts a subPath through it. */
function symlinkEscape(ctx: SpecContext): ReturnType<VariantBuilder> {
  const pod = withSpec(ctx, { volumes: emptyDirs(1), restartPolicy: 'Always' });
  pod.spec.initContainers = [{ name: 'plant', image: 'busybox:1.35', command: ['sh', '-c', 'ln -s / /t/evil && ln -s ../../../../../../tmp /t/rel'], volumeMounts: [{ name: 'v0', mountPath: '/t' }] }];
  mainContainer(pod).volumeMounts = [{ name: 'v0', mountPath: '/t', subPath: ctx.rng.pick([`evil/tmp/${ESCAPE_MARKER}-${ctx.index}`, `rel/${ESCAPE_MARKER}-${ctx.index}`, 'evil']) }];
  return pod;
}

export const traversal: Record<string, VariantBuilder> = {
  'subpath-dotdot': (ctx) => traversalPod(ctx, { subPath: climb(ctx, ctx.rng.int(1, 12)) }),
  'subpath-absolute': (ctx) => traversalPod(ctx, { subPath: `/tmp/${ESCAPE_MARKER}-${ctx.index}` }),
  'subpath-inner-dotdot': (ctx) => traversalPod(ctx, { subPath: `a/b/../../../${ESCAPE_MARKER}-${ctx.index}` }),
  'subpathexpr-env-dotdot': (ctx) => traversalPod(ctx, { subPathExpr: '$(EVIL)' }, [{ name: 'EVIL', value: climb(ctx, ctx.rng.int(1, 12)) }]),
  'subpathexpr-env-absolute': (ctx) => traversalPod(ctx, { subPathExpr: '$(EVIL)/x' }, [{ name: 'EVIL', value: `/tmp/${ESCAPE_MARKER}-${ctx.index}` }]),
  'subpathexpr-split-dotdot': (ctx) =>
    traversalPod(ctx, { subPathExpr: '$(A)$(B)/$(A)$(B)/$(C)' }, [
      { name: 'A', value: '.' },
      { name: 'B', value: '.' },
      { name: 'C', value: `${ESCAPE_MARKER}-${ctx.index}` },
    ]),
  'subpathexpr-fieldref': (ctx) => {
    const pod = traversalPod(ctx, { subPathExpr: '$(POD)/../../$(POD)' }, [{ name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }]);
    return pod;
  },
  'subpathexpr-missing-var': (ctx) => traversalPod(ctx, { subPathExpr: '$(NOT_DEFINED)/x' }),
  'subpath-and-expr': (ctx) => traversalPod(ctx, { subPath: 'a', subPathExpr: 'b' }),
  'symlink-escape': symlinkEscape,
  'mountpath-dotdot': (ctx) => traversalPod(ctx, { mountPath: `/t/../../${ESCAPE_MARKER}-${ctx.index}` }),
};
