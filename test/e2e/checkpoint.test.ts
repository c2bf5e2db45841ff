/**
 * End to end: the node server's checkpoint endpoint (`nodes/checkpoint`), reached as a user does,
 * through the API server's node proxy (`kubectl create --raw /api/v1/nodes/<node>/proxy/checkpoint/…`).
 * The request reaches the runtime (CRI CheckpointContainer: runc and CRIU). Where this host's CRIU
 * works (`criu check`), the archive exists under `<root>/checkpoints` with the kubelet's name;
 * where it cannot (Debian 12's CRIU 3.17 on a newer kernel: "Failed to fill self vdso symtable"),
 * the answer is the kubelet's 500 with the runtime's CRIU failure. Either way the container keeps
 * running, the same instance. Refusals (an unknown container) are the kubelet's 404.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { NODE_NAME, apply, containersOf, createNamespace, crictl, deleteNamespace, getPod, kubectlOutcome, requireCluster, waitForPhase } from './helpers.js';

const ROOT_DIR = path.join(process.env.CLUSTER_DIR ?? '', 'nodelet-root');

/** Whether CRIU can checkpoint on this host, and why not. */
async function criuWorks(): Promise<{ works: boolean; why: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)('criu', ['check'], { timeout: 30_000 });
    return { works: true, why: `${stdout}${stderr}`.trim() };
  } catch (error) {
    const failed = error as { stderr?: string; message: string };
    return { works: false, why: (failed.stderr ?? failed.message).trim().split('\n').at(-1) ?? '' };
  }
}

function checkpointPath(namespace: string, pod: string, container: string): string {
  return `/api/v1/nodes/${NODE_NAME}/proxy/checkpoint/${namespace}/${pod}/${container}`;
}

describe('the checkpoint endpoint (nodes/checkpoint)', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-checkpoint');
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('checkpoints a running container through the runtime, or answers the runtime\'s CRIU failure as the kubelet, the container running on', async () => {
    await apply({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'counter', namespace }, spec: { nodeName: NODE_NAME, terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: 'busybox:1.35', command: ['sh', '-c', 'i=0; while true; do i=$((i+1)); sleep 1; done'] }] } });
    await waitForPhase(namespace, 'counter', 'Running');
    const uid = (await getPod(namespace, 'counter'))?.metadata?.uid ?? '';
    const [before] = await containersOf(uid);
    const criu = await criuWorks();
    const outcome = await kubectlOutcome(['create', '--raw', `${checkpointPath(namespace, 'counter', 'main')}?timeout=60`, '-f', '/dev/null']);
    console.log(`# criu check: ${criu.works ? 'works' : criu.why}; answer: ${outcome.code === 0 ? outcome.stdout.trim() : outcome.stderr.trim().slice(0, 400)}`);
    if (criu.works) {
      assert.equal(outcome.code, 0, outcome.stderr);
      const items = (JSON.parse(outcome.stdout) as { items: string[] }).items;
      assert.equal(items.length, 1);
      assert.match(items[0] ?? '', new RegExp(`^${ROOT_DIR}/checkpoints/checkpoint-counter_${namespace}-main-\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ\\.tar$`));
      assert.ok((await stat(items[0] ?? '')).size > 0, 'the archive the runtime wrote');
    } else {
      assert.notEqual(outcome.code, 0);
      // The kubelet's answer on this host (npm run kubelet:up) reads the same.
      assert.match(outcome.stderr, new RegExp(`checkpointing of ${namespace}/counter/main failed \\(rpc error: code = Unknown desc = checkpointing container \\\\"${before ?? ''}\\\\" failed: .*criu failed`));
    }
    const state = JSON.parse(await crictl(['inspect', before ?? ''])) as { status: { state: string } };
    assert.equal(state.status.state, 'CONTAINER_RUNNING', 'the container runs on');
    assert.deepEqual(await containersOf(uid), [before], 'the same instance');
  });

  it('refuses an unknown container and an unknown pod with the kubelet\'s 404s', async () => {
    // -v=8: kubectl logs the node server's answer, which its error line leaves out.
    const unknown = await kubectlOutcome(['create', '--raw', checkpointPath(namespace, 'counter', 'nope'), '-f', '/dev/null', '-v=8']);
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /status="404 Not Found"/);
    assert.match(unknown.stderr, /container nope does not exist/);
    const missingPod = await kubectlOutcome(['create', '--raw', checkpointPath(namespace, 'absent', 'main'), '-f', '/dev/null', '-v=8']);
    assert.match(missingPod.stderr, /pod does not exist/);
  });
});
