/**
 * Helpers of the Helm chart test: run helm, render `charts/nodelet` with `--set` values, parse the
 * rendered manifests into client-node's typed objects, and look objects up by kind and name.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { loadYaml, type KubernetesObject, type V1ClusterRole, type V1Container, type V1DaemonSet, type V1EnvVar, type V1PolicyRule, type V1Role } from '@kubernetes/client-node';

const run = promisify(execFile);

export const REPO_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const CHART_DIR = path.join(REPO_DIR, 'charts/nodelet');

/** helm from PATH (`.cluster/env` puts `.cluster/bin` first), else the harness' build cache. */
function helmBinary(): string {
  const cached = path.join(os.homedir(), '.cache/nodelet/bin/helm-v3.22.0/helm');
  const onPath = (process.env.PATH ?? '').split(':').some((dir) => dir !== '' && existsSync(path.join(dir, 'helm')));
  return onPath || !existsSync(cached) ? 'helm' : cached;
}

/** What a helm run printed; `code` is 0 on success. */
export interface HelmResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs helm; never rejects on a non-zero exit (the caller asserts on `code`). */
export async function helm(args: readonly string[]): Promise<HelmResult> {
  try {
    const { stdout, stderr } = await run(helmBinary(), [...args], { maxBuffer: 16 * 1024 * 1024, timeout: 180_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    // execFile's error carries the exit code and both outputs (strings: no encoding option was given).
    const failed = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

/** `--set` (typed by helm) and `--set-string` values for one render. */
export interface RenderValues {
  readonly set?: readonly string[];
  readonly setString?: readonly string[];
}

/** Command-line arguments carrying `values`. */
export function valueArgs(values: RenderValues = {}): string[] {
  return [...(values.set ?? []).flatMap((v) => ['--set', v]), ...(values.setString ?? []).flatMap((v) => ['--set-string', v])];
}

/**
 * Parses a multi-document manifest stream; comment-only documents are skipped. client-node's
 * `loadYaml` maps each document onto its API type (a field the type does not know is dropped, so a
 * misspelt field fails the assertions on it); the JSON round trip then turns its model classes into
 * plain objects, which `assert.deepEqual` compares with literals.
 */
export function parseManifests(text: string): KubernetesObject[] {
  return text
    .split(/^---\s*$/m)
    .filter((doc) => doc.split('\n').some((line) => line.trim() !== '' && !line.trim().startsWith('#')))
    .map((doc) => JSON.parse(JSON.stringify(loadYaml<KubernetesObject>(doc))) as KubernetesObject);
}

/** `helm template` of the chart as release `rel` in namespace `nodelet-system`; rejects on failure. */
export async function renderChart(values: RenderValues = {}): Promise<KubernetesObject[]> {
  const result = await helm(['template', 'rel', CHART_DIR, '--namespace', 'nodelet-system', ...valueArgs(values)]);
  if (result.code !== 0) throw new Error(`helm template failed (${result.code}): ${result.stderr}`);
  return parseManifests(result.stdout);
}

/** Every object of `kind`. */
export function allOf<T extends KubernetesObject>(objects: readonly KubernetesObject[], kind: string): T[] {
  return objects.filter((o) => o.kind === kind) as T[];
}

/** The one object of `kind` (named `name` when given); throws naming what is missing. */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the kind's type
export function oneOf<T extends KubernetesObject>(objects: readonly KubernetesObject[], kind: string, name?: string): T {
  const found = allOf<T>(objects, kind).filter((o) => name === undefined || o.metadata?.name === name);
  if (found.length !== 1) throw new Error(`expected one ${kind}${name === undefined ? '' : ` ${name}`}, found ${found.length}`);
  return found[0]!;
}

/** The named container of the DaemonSet's pod template. */
export function containerOf(daemonSet: V1DaemonSet, name: string): V1Container {
  const container = daemonSet.spec?.template.spec?.containers.find((c) => c.name === name);
  if (container === undefined) throw new Error(`the DaemonSet has no container ${name}`);
  return container;
}

/** The named environment variable of a container. */
export function envOf(container: V1Container, name: string): V1EnvVar | undefined {
  return container.env?.find((e) => e.name === name);
}

/** Expands `$(VAR)` references the way the kubelet does for args, from `values`. */
export function expandArgs(args: readonly string[], values: Readonly<Record<string, string>>): string[] {
  return args.map((arg) => arg.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) => values[name] ?? whole));
}

/** Rules as "group/resource" → sorted verbs, over every rule of the given roles. */
export function verbsByResource(roles: readonly (V1ClusterRole | V1Role)[]): Record<string, string[]> {
  const table: Record<string, string[]> = {};
  const rules: V1PolicyRule[] = roles.flatMap((role) => role.rules ?? []);
  for (const rule of rules) {
    for (const group of rule.apiGroups ?? []) {
      for (const resource of rule.resources ?? []) {
        const key = `${group === '' ? 'core' : group}/${resource}`;
        table[key] = [...new Set([...(table[key] ?? []), ...rule.verbs])].sort();
      }
    }
  }
  return table;
}

/** The directory of the image's runtime binaries (containerd 2, runc), built and cached by image/build.sh. */
async function imageRuntimeBin(): Promise<string> {
  const { stdout } = await run('bash', [path.join(REPO_DIR, 'image/build.sh'), '--runtime-bin'], { timeout: 15 * 60_000 });
  return stdout.trim();
}

/**
 * containerd's own reading of a rendered containerd.toml (`containerd config dump`), by the
 * containerd the image ships, so a key it does not know or a version it cannot read fails here.
 */
export async function containerdConfigDump(toml: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'nodelet-chart-'));
  try {
    const file = path.join(dir, 'containerd.toml');
    await writeFile(file, toml);
    const containerd = path.join(await imageRuntimeBin(), 'containerd');
    const { stdout, stderr } = await run(containerd, ['--config', file, 'config', 'dump'], { timeout: 30_000 });
    // containerd migrates an older config version on every start, and says so.
    assert.doesNotMatch(stderr, /Configuration migrated/, 'the chart writes the config version the image\'s containerd reads natively');
    return stdout;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * One key of `containerd config dump` output, quotes removed: `table` is the header as the dump
 * prints it without brackets (`plugins.'io.containerd.server.v1.grpc'`), '' for the top level.
 * Undefined when the table or the key is absent.
 */
export function dumpedValue(dump: string, table: string, key: string): string | undefined {
  let current = '';
  for (const line of dump.split('\n').map((l) => l.trim())) {
    const header = /^\[(.+)\]$/.exec(line);
    if (header?.[1] !== undefined) {
      current = header[1];
    } else if (current === table) {
      const value = new RegExp(`^${key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} = (.*)$`).exec(line)?.[1];
      if (value !== undefined) return value.replace(/^'(.*)'$/, '$1');
    }
  }
  return undefined;
}
