/**
 * End to end: recursive read-only mounts on containerd 2. A hostPath directory with a tmpfs mounted
 * below it is mounted twice read-only: with `recursiveReadOnly: Enabled` the container cannot write
 * below it either (the submount is read-only too); without, the submount stays writable, which is
 * why the recursive mode matters. The OCI spec has runc's `rro` on the first only; the pod's
 * `containerStatuses[].volumeMounts` report each mount's resolved mode, as the kubelet's.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { NODE_NAME, apply, containersOf, createNamespace, crictl, deleteNamespace, eventually, getPod, kubectl, requireCluster } from './helpers.js';

const run = promisify(execFile);
const TREE = path.join(process.env.CLUSTER_DIR ?? '', 'e2e-recursive-read-only');

interface OciMount { destination: string; options?: string[] }

describe('recursive read-only mounts (recursiveReadOnly: Enabled)', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    await mkdir(path.join(TREE, 'sub'), { recursive: true });
    await run('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'e2e-rro', path.join(TREE, 'sub')]);
    namespace = await createNamespace('e2e-rro');
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
    await run('umount', [path.join(TREE, 'sub')]).catch(() => undefined);
    await rm(TREE, { recursive: true, force: true });
  });

  it('keeps a container from writing below a recursive read-only mount, where a plain read-only one lets it, and reports each mode', async () => {
    const script = 'for d in /tree /tree/sub /plain/sub; do if touch $d/probe 2>/dev/null; then echo "$d writable"; else echo "$d read-only"; fi; done; exec sleep 3600';
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'rro', namespace },
      spec: {
        nodeName: NODE_NAME,
        terminationGracePeriodSeconds: 1,
        containers: [{
          name: 'main',
          image: 'busybox:1.35',
          command: ['sh', '-c', script],
          volumeMounts: [
            { name: 'tree', mountPath: '/tree', readOnly: true, recursiveReadOnly: 'Enabled' },
            { name: 'tree', mountPath: '/plain', readOnly: true },
          ],
        }],
        volumes: [{ name: 'tree', hostPath: { path: TREE, type: 'Directory' } }],
      },
    });
    const logs = await eventually('the container\'s three answers', async () => {
      const text = await kubectl(['logs', '-n', namespace, 'rro']).catch(() => '');
      return text.split('\n').filter((l) => l !== '').length >= 3 ? text : undefined;
    }, 120_000);
    console.log(`# ${logs.trim().replace(/\n/g, ' | ')}`);
    assert.match(logs, /^\/tree read-only$/m);
    assert.match(logs, /^\/tree\/sub read-only$/m, 'the submount is read-only through the recursive mount');
    assert.match(logs, /^\/plain\/sub writable$/m, 'through a plain read-only mount it is not: the recursive mode made the difference');

    const pod = await getPod(namespace, 'rro');
    const [id] = await containersOf(pod?.metadata?.uid ?? '');
    const spec = (JSON.parse(await crictl(['inspect', id ?? ''])) as { info: { runtimeSpec: { mounts: OciMount[] } } }).info.runtimeSpec;
    const options = (dest: string): string[] => spec.mounts.find((m) => m.destination === dest)?.options ?? [];
    assert.ok(options('/tree').includes('rro'), `runc's rro on /tree: ${options('/tree').join(',')}`);
    assert.ok(!options('/plain').includes('rro') && options('/plain').includes('ro'), `plain ro on /plain: ${options('/plain').join(',')}`);

    const mounts = pod?.status?.containerStatuses?.[0]?.volumeMounts ?? [];
    const modes = Object.fromEntries(mounts.map((m) => [m.mountPath, m.recursiveReadOnly]));
    assert.deepEqual(modes['/tree'], 'Enabled');
    assert.deepEqual(modes['/plain'], 'Disabled');
  });
});
