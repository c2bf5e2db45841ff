/**
 * Shapes shared by the hostile-spec generator's category builders: a pod manifest is plain JSON
 * (many specs are deliberately invalid, so they cannot be typed as a valid `V1Pod`).
 */
import type { Random } from './random.js';

/** A pod manifest as sent to the API server (plain JSON; may be invalid on purpose). */
export type PodManifest = Record<string, unknown> & { metadata: Record<string, unknown>; spec: Record<string, unknown> };

/** What every builder gets for one spec. */
export interface SpecContext {
  readonly rng: Random;
  /** Position of the spec in the run (0-based): part of every generated name. */
  readonly index: number;
  readonly nodeName: string;
  readonly namespace: string;
}

/** One way to be hostile within a category. */
export type VariantBuilder = (ctx: SpecContext) => PodManifest;

/** The kinds of hostile specs; every run of at least this many specs covers each one. */
export const CATEGORIES = [
  'huge-env',
  'volumes',
  'names',
  'traversal',
  'termination-path',
  'resources',
  'images',
  'probes',
  'commands',
  'sysctls',
  'security',
  'pod-misc',
] as const;

export type Category = (typeof CATEGORIES)[number];

/** One generated spec. */
export interface HostileSpec {
  readonly index: number;
  readonly category: Category;
  readonly variant: string;
  readonly pod: PodManifest;
}

/**
 * The prefix of every host path a traversal spec aims at: after the run, no file or directory
 * whose name starts with it may exist outside the pod directories.
 */
export const ESCAPE_MARKER = 'nodelet-hostile-escape';

/** A ConfigMap and a Secret the run creates in its namespace (some specs use them, some name missing ones). */
export const FIXTURE_CONFIGMAP = 'hostile-cm';
export const FIXTURE_SECRET = 'hostile-secret';
export const FIXTURE_KEYS = ['a', 'b', 'c'] as const;
