/**
 * The seeded generator of hostile pod specs: spec `i` of seed `s` is the same on every run (its
 * own random stream, derived from both), so one spec can be rebuilt from the seed and its index.
 * Categories take turns (spec `i` is of category `i mod 12`), so any run of at least 12 specs
 * covers every category; the variant within a category is drawn at random.
 */
import { hugeEnv, names, traversal, volumes } from './categories-a.js';
import { commands, images, podMisc, probes, resources, security, sysctls, terminationPath } from './categories-b.js';
import { seededRandom } from './random.js';
import { CATEGORIES, type Category, type HostileSpec, type VariantBuilder } from './types.js';

/** The variants of each category, by name. */
export const VARIANTS: Readonly<Record<Category, Readonly<Record<string, VariantBuilder>>>> = {
  'huge-env': hugeEnv,
  volumes,
  names,
  traversal,
  'termination-path': terminationPath,
  resources,
  images,
  probes,
  commands,
  sysctls,
  security,
  'pod-misc': podMisc,
};

/** Where the generated pods go. */
export interface GenerateOptions {
  readonly seed: number;
  readonly nodeName: string;
  readonly namespace: string;
}

/** A per-spec seed mixing the run's seed with the index (so specs do not share one stream). */
function specSeed(seed: number, index: number): number {
  return (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(index + 1, 0xc2b2ae35)) >>> 0;
}

/** Spec number `index` of the run. Pure: the same options and index give the same spec. */
export function hostileSpec(options: GenerateOptions, index: number): HostileSpec {
  const rng = seededRandom(specSeed(options.seed, index));
  const category = CATEGORIES[index % CATEGORIES.length]!;
  const table = VARIANTS[category];
  const variant = rng.pick(Object.keys(table).sort());
  const pod = table[variant]!({ rng, index, nodeName: options.nodeName, namespace: options.namespace });
  return { index, category, variant, pod };
}

/** Specs `from` (included) to `to` (excluded). */
export function hostileSpecs(options: GenerateOptions, from: number, to: number): HostileSpec[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, i) => hostileSpec(options, from + i));
}
