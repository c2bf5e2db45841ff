/** The well-formed pod every hostile variant starts from, and small helpers to bend it. */
import type { PodManifest, SpecContext } from './types.js';

export const IMAGE = 'busybox:1.35';

/** A sleeping busybox pod bound to the test node; `name` defaults to `h<index>`. */
export function basePod(ctx: SpecContext, name = `h${ctx.index}`): PodManifest {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ctx.namespace, labels: { 'nodelet.dev/hostile': 'true' } },
    spec: {
      nodeName: ctx.nodeName,
      restartPolicy: ctx.rng.pick(['Always', 'Never', 'OnFailure']),
      terminationGracePeriodSeconds: 1,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      containers: [{ name: 'main', image: IMAGE, command: ['sleep', '3600'] }],
    },
  };
}

/** The pod's first container (every base pod has one). */
export function mainContainer(pod: PodManifest): Record<string, unknown> {
  const containers = pod.spec.containers as Record<string, unknown>[];
  return containers[0]!;
}

/** The base pod with `fields` merged into its first container. */
export function withContainer(ctx: SpecContext, fields: Record<string, unknown>): PodManifest {
  const pod = basePod(ctx);
  Object.assign(mainContainer(pod), fields);
  return pod;
}

/** The base pod with `fields` merged into its spec. */
export function withSpec(ctx: SpecContext, fields: Record<string, unknown>): PodManifest {
  const pod = basePod(ctx);
  Object.assign(pod.spec, fields);
  return pod;
}

/** A string of `length` characters drawn from `alphabet`, seeded. */
export function randomText(ctx: SpecContext, length: number, alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789'): string {
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet.charAt(ctx.rng.int(0, alphabet.length - 1));
  return out;
}
