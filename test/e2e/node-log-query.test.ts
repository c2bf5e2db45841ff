/**
 * End to end, with the real kubectl through the API server's node proxy to the nodelet node (its
 * agent runs with `--enable-system-log-query`, test/cluster/lib/agent.sh): the node log query as
 * the kubelet v1.37 answers it without journald.
 * - `?query=<service>` finds `<service>.log` under /var/log and returns it byte for byte; two
 *   services one after the other; an unknown one says `log not found for <name>`.
 * - `?query=./<file>` serves the file; `?query=pods/<dir>/main/0.log` a pod's log.
 * - Options with a service found as a file give the kubelet's note, not the log; a file with
 *   options, an absolute name, a name with a path below /logs/ are 406; a bad tailLines is 400.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { NODE_NAME, apply, busyboxPod, createNamespace, deleteNamespace, kubectl, kubectlOutcome, requireCluster, waitForPhase } from './helpers.js';

const NODE_PROXY = `/api/v1/nodes/${NODE_NAME}/proxy`;

describe('node log query (kubectl get --raw …/proxy/logs/?query=)', () => {
  let namespace = '';
  const service = `nodelet-e2e-logq-${randomBytes(4).toString('hex')}`;
  const file = `/var/log/${service}.log`;
  const content = `first line of ${service}\nsecond line\n`;

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-log-query');
    await writeFile(file, content);
  });

  after(async () => {
    await rm(file, { force: true });
    if (namespace !== '') await deleteNamespace(namespace);
  });

  const raw = (query: string): Promise<string> => kubectl(['get', '--raw', `${NODE_PROXY}/logs/?${query}`]);

  it("reads a service's log from /var/log/<service>.log, and says when there is none", { timeout: 60_000 }, async () => {
    assert.equal(await raw(`query=${service}`), content);
    assert.equal(await raw(`query=${service}&query=${service}`), content + content);
    assert.equal(await raw(`query=${service}-absent`), `\nlog not found for ${service}-absent\n`);
    assert.equal(await raw(`query=./${service}.log`), content);
  });

  it("serves a pod's log file by its path under /var/log", { timeout: 120_000 }, async () => {
    await apply(busyboxPod({ name: 'lines', namespace, script: 'for i in $(seq 1 20); do echo "query line $i"; done', nodeName: NODE_NAME, restartPolicy: 'Never' }));
    const pod = await waitForPhase(namespace, 'lines', 'Succeeded');
    const relative = `pods/${namespace}_lines_${pod.metadata?.uid ?? ''}/main/0.log`;
    assert.equal(await raw(`query=${relative}`), await readFile(`/var/log/${relative}`, 'utf8'));
  });

  it("answers options on a service found as a file with the kubelet's note, and refuses what the kubelet refuses", { timeout: 60_000 }, async () => {
    assert.equal(await raw(`query=${service}&tailLines=1`), `\noptions present and query resolved to log files for [${service}]\ntry without specifying options\n`);
    const refusals: readonly [string, RegExp][] = [
      [`logs/?query=./${service}.log&tailLines=1`, /NotAcceptable|406/],
      ['logs/?query=/etc/passwd', /NotAcceptable|406/],
      [`logs/pods?query=${service}`, /NotAcceptable|406/],
      [`logs/?query=${service}&tailLines=x`, /BadRequest|400/],
    ];
    for (const [url, want] of refusals) {
      const outcome = await kubectlOutcome(['get', '--raw', `${NODE_PROXY}/${url}`]);
      assert.notEqual(outcome.code, 0, url);
      assert.match(outcome.stderr, want, url);
      assert.doesNotMatch(outcome.stdout + outcome.stderr, /root:x:0:0/, url);
    }
  });
});
