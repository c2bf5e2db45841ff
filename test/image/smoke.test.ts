/**
 * Smoke test of nodelet's image on the test cluster: `image/import.sh` builds it (cached) and imports
 * it into the cluster's containerd, then two pods run it on the test node, restartPolicy Never:
 *
 * - `tools`: the command overridden to run what the chart's containers run: nodelet's CLI
 *   (`node /app/bin/nodelet.js --help` and `--version`), `node --version`, `containerd --version`,
 *   `runc --version`, `iptables --version` and a listing of the CNI plugins' directory; each must
 *   succeed (the script stops at the first failure), and each one's output is asserted in
 *   `kubectl logs` against the pins of image/versions.env. It also looks for npm, npx, tsc and tsx on
 *   the PATH and under node's module directories: none may be there.
 * - `nobody`: the CLI as uid/gid 65534 with runAsNonRoot, as the chart runs its Redis and
 *   redis-users containers (and 1000, the dashboard's and approver's, in `uid1000`).
 * - `entrypoint`: only `args: [--help]`, so the image's own ENTRYPOINT and WorkingDir
 *   (`node bin/nodelet.js` in /app) are what runs.
 *
 * Both must end Succeeded with exit code 0 in the API and EXITED(0) in the runtime (crictl), with the
 * image ID (config digest) the build wrote. The image is removed from containerd first, so the import
 * (which unpacks the layers) is measured from scratch; the figures are printed, never asserted.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import {
  NODE_NAME,
  apply,
  containerStatusOf,
  createNamespace,
  crictl,
  deleteNamespace,
  eventually,
  getPod,
  kubectl,
  msBetween,
  requireCluster,
  runtimeContainers,
  type RuntimeContainer,
} from '../e2e/helpers.js';
import { REPO_DIR, buildImage, imagePins, mb, type BuiltImage } from './image-helpers.js';

const run = promisify(execFile);
const TOOLS_SCRIPT = [
  'set -e',
  'echo "== nodelet"; node /app/bin/nodelet.js --help',
  'echo "== version"; node /app/bin/nodelet.js --version',
  'echo "== node"; node --version',
  // Prints each build tool found, on the PATH or in a global module directory; nothing is expected.
  'echo "== build tools"',
  'for tool in npm npx tsc tsx corepack; do command -v "$tool" || true; done',
  'ls -d /usr/local/lib/node_modules/* /usr/lib/node_modules/* /app/node_modules/typescript /app/node_modules/tsx 2>/dev/null || true',
  'echo "== containerd"; containerd --version',
  'echo "== runc"; runc --version',
  'echo "== iptables"; iptables --version',
  'echo "== cni"; ls /usr/lib/cni',
  'echo "== done"',
].join('\n');

/** A pod of nodelet's image on the test node, pulled only if absent (the chart's default policy). */
function imagePod(name: string, namespace: string, image: string, container: object): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName: NODE_NAME,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 5,
      containers: [{ name: 'main', image, imagePullPolicy: 'IfNotPresent', ...container }],
    },
  };
}

/** A finished pod with its runtime view and the test's own clock from apply to the end. */
interface Finished {
  readonly pod: V1Pod;
  readonly container: RuntimeContainer;
  /** Milliseconds from `kubectl apply` returning to the pod's terminal phase being seen. */
  readonly wallMs: number;
}

/** Applies the pod, waits for a terminal phase, asserts success in the API and the runtime. */
async function runToCompletion(manifest: object, namespace: string, name: string, image: BuiltImage): Promise<Finished> {
  await apply(manifest);
  const started = process.hrtime.bigint();
  const pod = await eventually(`pod ${namespace}/${name} to finish`, async () => {
    const found = await getPod(namespace, name);
    return ['Succeeded', 'Failed'].includes(found?.status?.phase ?? '') ? found : undefined;
  }, 180_000);
  const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
  const logs = await kubectl(['logs', '-n', namespace, name]).catch(() => '');
  assert.equal(pod.status?.phase, 'Succeeded', `${name} failed; its logs:\n${logs}`);
  const status = containerStatusOf(pod, 'main');
  assert.equal(status?.state?.terminated?.exitCode, 0);
  assert.equal(status?.imageID, image.configDigest, 'the container ran the image the build made');
  const containers = await runtimeContainers(pod.metadata?.uid ?? '');
  assert.deepEqual(containers.map((c) => `${c.name}#${c.attempt}:${c.state}(${c.exitCode})`), ['main#0:CONTAINER_EXITED(0)']);
  const [container] = containers;
  assert.ok(container !== undefined);
  return { pod, container, wallMs };
}

/** The measured figures of one run, printed (never asserted: they depend on the machine's load). */
function printTimes(what: string, run: Finished): void {
  const { container } = run;
  console.log(`# ${what}: apply → Succeeded ${run.wallMs.toFixed(0)} ms; runtime created → started ` +
    `${msBetween(container.createdNs, container.startedNs).toFixed(0)} ms; started → exited (the command) ` +
    `${msBetween(container.startedNs, container.finishedNs).toFixed(0)} ms`);
}

describe('nodelet image on the test cluster', () => {
  let namespace = '';
  let image: BuiltImage;
  /** The reference as the chart writes it (repository `nodelet`, tag the version). */
  let short = '';

  before(async () => {
    requireCluster();
    image = await buildImage();
    console.log(`# image:build (this call, cache as found): ${image.buildSeconds.toFixed(1)} s; ` +
      `${mb(image.sizes.compressed)} compressed, ${mb(image.sizes.uncompressed)} uncompressed`);
    await crictl(['rmi', image.ref]).catch(() => '');
    const started = process.hrtime.bigint();
    const { stdout } = await run('bash', [path.join(REPO_DIR, 'image/import.sh')], { timeout: 10 * 60_000 });
    console.log(`# image:import into the cluster's containerd: ${(Number(process.hrtime.bigint() - started) / 1e9).toFixed(1)} s`);
    assert.equal(stdout.trim(), `${image.ref} ${image.digest}`);
    const listed = JSON.parse(await crictl(['images', '-o', 'json'])) as { images: { id: string; repoTags: string[] }[] };
    const listedIds = listed.images.filter((i) => i.repoTags.includes(image.ref)).map((i) => i.id);
    assert.deepEqual(listedIds, [image.configDigest], `${image.ref} in crictl images, with the built config digest`);
    short = image.ref.replace(/^docker\.io\/library\//, '');
    namespace = await createNamespace('image-smoke');
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it("runs nodelet's CLI, containerd, runc and iptables, and has the CNI plugins", async () => {
    const run = await runToCompletion(imagePod('tools', namespace, short, { command: ['/bin/sh', '-c', TOOLS_SCRIPT] }), namespace, 'tools', image);
    printTimes('first pod of the image (tools script)', run);
    const logs = await kubectl(['logs', '-n', namespace, 'tools']);
    assert.match(logs, /== nodelet\nUsage: nodelet \[agent\] \[flags\]/);
    const pins = await imagePins();
    const { version } = JSON.parse(await readFile(path.join(REPO_DIR, 'package.json'), 'utf8')) as { version: string };
    assert.match(logs, new RegExp(`== version\\nnodelet v${version.replaceAll('.', '\\.')}\\S* \\(Node\\.js v${pins.NODE_VERSION}\\)`));
    assert.match(logs, new RegExp(`== node\\nv${pins.NODE_VERSION}\\n`));
    const buildTools = /== build tools\n([\s\S]*?)== containerd/.exec(logs)?.[1]?.trim();
    assert.equal(buildTools, '', 'no npm, npx, tsc, tsx or corepack in the image');
    assert.match(logs, new RegExp(`== containerd\\ncontainerd \\S+ ${pins.CONTAINERD_VERSION}\\b`));
    assert.match(logs, new RegExp(`== runc\\nrunc version ${pins.RUNC_VERSION.replace(/^v/, '')}\\n`));
    console.log(`# in the image: node v${pins.NODE_VERSION}, containerd ${pins.CONTAINERD_VERSION}, runc ${pins.RUNC_VERSION}, nodelet ${version}; no npm, npx, tsc, tsx or corepack`);
    assert.match(logs, /== iptables\niptables v1\.8\.\d+/);
    const cni = /== cni\n([\s\S]*?)== done/.exec(logs)?.[1]?.split('\n') ?? [];
    for (const plugin of ['bridge', 'host-local', 'portmap', 'loopback']) {
      assert.ok(cni.includes(plugin), `${plugin} in /usr/lib/cni: ${cni.join(' ')}`);
    }
  });

  for (const uid of [65534, 1000]) {
    it(`runs nodelet's CLI as the non-root user ${uid}, as the chart's unprivileged containers do`, async () => {
      const name = `uid${uid}`;
      const securityContext = { runAsUser: uid, runAsGroup: uid, runAsNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } };
      const done = await runToCompletion(imagePod(name, namespace, short, { args: ['--version'], securityContext }), namespace, name, image);
      printTimes(`pod of the image as uid ${uid}`, done);
      assert.match(await kubectl(['logs', '-n', namespace, name]), /^nodelet v\d+\.\d+\.\d+\S* \(Node\.js v\d+/);
      const [specUid] = (await crictl(['inspect', '-o', 'go-template', '--template', '{{.info.runtimeSpec.process.user.uid}}', done.container.id])).trim().split('\n');
      assert.equal(specUid, String(uid), 'the runtime ran the process as that user');
    });
  }

  it('runs nodelet through its own ENTRYPOINT and WorkingDir', async () => {
    const run = await runToCompletion(imagePod('entrypoint', namespace, short, { args: ['--help'] }), namespace, 'entrypoint', image);
    printTimes('second pod of the image (nodelet --help)', run);
    const logs = await kubectl(['logs', '-n', namespace, 'entrypoint']);
    assert.match(logs, /^Usage: nodelet \[agent\] \[flags\]/);
  });
});
