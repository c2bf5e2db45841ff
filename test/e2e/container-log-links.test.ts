/**
 * End to end: the container log links (the kubelet's `/var/log/containers/<pod>_<namespace>_<container>-<id>.log`,
 * which log collectors read, and which the node conformance test "ContainerLogPath … should print
 * log to correct log path" checks). A pod logs a line: its container's link exists under the
 * kubelet's name, points at the container's log file and reads that line through it. A restart
 * makes a second link for the new container ID (the exited instance keeps its own while it
 * exists). Deleting the pod removes both. The agent runs with the default
 * `--container-log-link-dir` (/var/log/containers), which the test cluster's kubelet node shares:
 * only the links of this test's pod are looked at.
 */
import assert from 'node:assert/strict';
import { lstat, readFile, readlink } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { apply, busyboxPod, containerStatusOf, createNamespace, crictl, deleteNamespace, eventually, getPod, kubectl, requireCluster, waitForPhase } from './helpers.js';

const LINK_DIR = process.env.CONTAINER_LOG_LINK_DIR ?? '/var/log/containers';
const LINE = 'a line for the log collectors';
/** Logs the line, then exits (code 1: a restart) once told to through a file in its own root filesystem, which a new instance does not have. */
const SCRIPT = `echo "${LINE} from $(hostname)"; while [ ! -f /tmp/stop ]; do sleep 1; done; exit 1`;

const linkOf = (namespace: string, id: string): string => path.join(LINK_DIR, `links_${namespace}_main-${id}.log`);
const idOf = (containerId: string | undefined): string => (containerId ?? '').replace(/^containerd:\/\//, '');
const gone = (file: string): Promise<boolean> => lstat(file).then(() => false, (e: unknown) => e instanceof Error && 'code' in e && e.code === 'ENOENT');

/** The link of container `id`: where it points (the runtime's log path) and that the line reads through it. */
async function expectLink(namespace: string, id: string): Promise<string> {
  const { logPath } = (JSON.parse(await crictl(['inspect', '-o', 'json', id])) as { status: { logPath: string } }).status;
  const link = linkOf(namespace, id);
  await eventually(`the link ${link} reading the line`, async () => ((await readFile(link, 'utf8')).includes(LINE) ? true : undefined), 30_000);
  assert.equal(await readlink(link), logPath, 'the link points at the log file the runtime writes');
  return logPath;
}

describe('container log links', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-loglinks');
  });

  after(async () => {
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('links each container as <pod>_<namespace>_<container>-<id>.log to its log, a new one per restart, and removes them with the pod', { timeout: 180_000 }, async () => {
    await apply(busyboxPod({ name: 'links', namespace, script: SCRIPT }));
    const running = await waitForPhase(namespace, 'links', 'Running');
    const first = idOf(containerStatusOf(running, 'main')?.containerID);
    assert.notEqual(first, '');
    const firstLog = await expectLink(namespace, first);
    assert.match(firstLog, new RegExp(`/${namespace}_links_${running.metadata?.uid ?? ''}/main/0\\.log$`));

    await kubectl(['exec', '-n', namespace, 'links', '--', 'touch', '/tmp/stop']);
    const restarted = await eventually('the container restarted and running again', async () => {
      const pod = await getPod(namespace, 'links');
      const status = pod === undefined ? undefined : containerStatusOf(pod, 'main');
      return status?.restartCount === 1 && status.state?.running !== undefined ? idOf(status.containerID) : undefined;
    }, 120_000);
    assert.notEqual(restarted, first);
    const secondLog = await expectLink(namespace, restarted);
    assert.match(secondLog, /\/main\/1\.log$/);
    assert.equal(await readlink(linkOf(namespace, first)), firstLog, "the exited instance keeps its link while the runtime keeps it");

    await kubectl(['delete', 'pod', '-n', namespace, 'links', '--wait=true', '--timeout=60s']);
    await eventually('both links removed with the pod', async () => ((await gone(linkOf(namespace, first))) && (await gone(linkOf(namespace, restarted))) ? true : undefined), 60_000);
  });
});
