/**
 * End to end: `fileKeyRef` env variables (the kubelet's EnvFiles, beta and on since 1.35). An init
 * container writes an env file into an emptyDir; the app container starts with the values read
 * from it. Asserted on the container's own environment (its output), on the runtime's container
 * config (`crictl inspect`), and for the failures on the status and the runtime (no app container).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { NODE_NAME, apply, containerStatusOf, crictl, createNamespace, deleteNamespace, eventually, getPod, kubectl, requireCluster, runtimePicture, waitForPhase } from './helpers.js';

/** A script printing `NAME=value` for each variable of `env`, in order (`<unset>` when absent). */
function printEach(env: object[]): string {
  const names = env.map((e) => (e as { name: string }).name);
  return names.map((n) => 'echo "' + n + '=${' + n + "-<unset>}\"").join('; ');
}

/** A pod whose init container runs `write` in /data and whose app container prints its env. */
function pod(namespace: string, name: string, write: string, env: object[]): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName: NODE_NAME,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      volumes: [{ name: 'data', emptyDir: {} }],
      initContainers: [{ name: 'writer', image: 'busybox:1.35', command: ['sh', '-c', write], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
      containers: [{ name: 'app', image: 'busybox:1.35', command: ['sh', '-c', printEach(env)], env }],
    },
  };
}

const fromFile = (name: string, key: string, extra: object = {}): object => ({ name, valueFrom: { fileKeyRef: { volumeName: 'data', path: 'config.env', key, ...extra } } });

/** The env the runtime holds for the pod's container `name` (`crictl inspect` → info.config.envs). */
async function runtimeEnv(uid: string, name: string): Promise<Map<string, string>> {
  const id = (await crictl(['ps', '-a', '-q', '--label', `io.kubernetes.pod.uid=${uid}`, '--name', `^${name}$`])).trim();
  assert.ok(id !== '' && !id.includes('\n'), `one ${name} container in the runtime, got ${JSON.stringify(id)}`);
  const inspected = JSON.parse(await crictl(['inspect', '-o', 'json', id])) as { info?: { config?: { envs?: { key: string; value: string }[] } } };
  return new Map((inspected.info?.config?.envs ?? []).map((e) => [e.key, e.value]));
}

describe('env variables from files (fileKeyRef) on nodelet', () => {
  let ns = '';

  before(async () => {
    requireCluster();
    ns = await createNamespace('e2e-env-files');
  });

  after(async () => {
    if (ns !== '') await deleteNamespace(ns);
  });

  it('starts the app container with values an init container wrote, literal and over two lines; skips an optional missing key', async () => {
    const write = `printf "%s\\n" "# settings" "ONE='value1'" "TWO='a \\$HOME' # comment" "MULTI='line1" "line2'" > /data/config.env`;
    await apply(pod(ns, 'reads', write, [fromFile('FROM_FILE_ONE', 'ONE'), fromFile('FROM_FILE_TWO', 'TWO'), fromFile('FROM_FILE_MULTI', 'MULTI'), fromFile('FROM_FILE_NONE', 'NONE', { optional: true })]));
    const p: V1Pod = await waitForPhase(ns, 'reads', 'Succeeded', 120_000);
    assert.equal(await kubectl(['logs', '-n', ns, 'reads', '-c', 'app']), 'FROM_FILE_ONE=value1\nFROM_FILE_TWO=a $HOME\nFROM_FILE_MULTI=line1\nline2\nFROM_FILE_NONE=<unset>\n');
    const env = await runtimeEnv(p.metadata?.uid ?? '', 'app');
    assert.deepEqual([...env].filter(([k]) => k.startsWith('FROM_FILE')).sort(), [['FROM_FILE_MULTI', 'line1\nline2'], ['FROM_FILE_ONE', 'value1'], ['FROM_FILE_TWO', 'a $HOME']]);
  });

  it("holds the app container in CreateContainerConfigError when the key is missing, with the kubelet's message", async () => {
    await apply(pod(ns, 'missing', "echo ONE=\\'1\\' > /data/config.env", [fromFile('FROM_FILE_X', 'MISSING')]));
    const p = await eventually('app in CreateContainerConfigError', async () => {
      const x = await getPod(ns, 'missing');
      return containerStatusOf(x ?? {}, 'app')?.state?.waiting?.reason === 'CreateContainerConfigError' ? x : undefined;
    });
    const uid = p.metadata?.uid ?? '';
    assert.match(containerStatusOf(p, 'app')?.state?.waiting?.message ?? '', new RegExp(`^environment variable key "MISSING" not found in file "/.+/pods/${uid}/volumes/kubernetes.io~empty-dir/data/config.env"$`));
    assert.equal(p.status?.phase, 'Pending');
    assert.deepEqual((await runtimePicture(uid)).containers, ['writer#0:EXITED(0)']);
  });

  it('resolves a symlink in the volume as if the volume were /: an absolute target is read inside it, never on the host', async () => {
    // On the host, /inside.env does not exist: only a join rooted at the volume finds the value.
    const write = "echo INSIDE=\\'in-volume\\' > /data/inside.env && ln -s /inside.env /data/config.env";
    await apply(pod(ns, 'symlink', write, [fromFile('FROM_FILE_INSIDE', 'INSIDE')]));
    const p = await waitForPhase(ns, 'symlink', 'Succeeded', 120_000);
    assert.equal(await kubectl(['logs', '-n', ns, 'symlink', '-c', 'app']), 'FROM_FILE_INSIDE=in-volume\n');
    assert.equal((await runtimeEnv(p.metadata?.uid ?? '', 'app')).get('FROM_FILE_INSIDE'), 'in-volume');
  });
});
