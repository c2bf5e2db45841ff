/**
 * End to end: container log rotation on the test cluster, driven live by the NodeAgent's
 * `spec.logRotation`. A pod writes numbered lines fast; with `containerLogMaxSize` lowered and
 * `containerLogMaxFiles: 2` the agent rotates its log every 10 s check. Polled throughout: the
 * log directory never holds more than the current file plus one rotated file, and the current
 * file stays below the size plus what the pod writes between checks. Afterwards: several distinct
 * rotations happened, the rotated file ends exactly where the current one begins (no line lost at
 * the boundary), `kubectl logs` still answers from the current file, and the container kept
 * running the whole time (same ID in crictl, no restart). The NodeAgent spec is restored after.
 */
import assert from 'node:assert/strict';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { apply, busyboxPod, createNamespace, crictl, deleteNamespace, eventually, getPod, kubectl, requireCluster, waitForPhase } from './helpers.js';
import { patchNodeAgentSpec, waitNodeAgentSettingsApplied } from './nodeagent-spec.js';

const MAX_SIZE = '16Ki';
const MAX_SIZE_BYTES = 16 * 1024;
const MAX_FILES = 2;
const CHECK_PERIOD_S = 10;
/** 50 numbered lines of ~90 bytes a second: about 6.5 KB/s in the CRI format, 65 KB between two checks. */
const SCRIPT = 'n=0; while true; do seq $((n+1)) $((n+50)) | sed "s/$/ 0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789/"; n=$((n+50)); sleep 1; done';

interface Inspected {
  status: { id: string; state: string; logPath: string; metadata: { attempt: number } };
}

/** The numbers of the complete CRI log lines in a file's content (`<time> stdout F <n> <filler>`); a line still being written is left out. */
function numbersOf(content: string): number[] {
  const complete = content.slice(0, content.lastIndexOf('\n') + 1);
  return complete.split('\n').filter((l) => l !== '').map((l) => Number(l.split(' ')[3]));
}

function consecutive(numbers: readonly number[]): boolean {
  return numbers.every((n, i) => i === 0 || n === (numbers[i - 1] ?? 0) + 1);
}

describe('container log rotation', () => {
  let namespace = '';

  before(async () => {
    requireCluster();
    namespace = await createNamespace('e2e-logrot');
    await patchNodeAgentSpec({ logRotation: { containerLogMaxSize: MAX_SIZE, containerLogMaxFiles: MAX_FILES } });
    await waitNodeAgentSettingsApplied();
  });

  after(async () => {
    await patchNodeAgentSpec({ logRotation: null }).catch(() => undefined);
    if (namespace !== '') await deleteNamespace(namespace);
  });

  it('rotates a fast-writing container log to the current file plus one rotated file; kubectl logs works and the container keeps running', { timeout: 240_000 }, async () => {
    await apply(busyboxPod({ name: 'writer', namespace, script: SCRIPT }));
    const pod = await waitForPhase(namespace, 'writer', 'Running');
    const uid = pod.metadata?.uid ?? '';
    const ids = (await crictl(['ps', '-a', '--label', `io.kubernetes.pod.uid=${uid}`, '-q'])).split('\n').filter((l) => l !== '');
    assert.equal(ids.length, 1);
    const id = ids[0] ?? '';
    const { logPath } = (JSON.parse(await crictl(['inspect', '-o', 'json', id])) as Inspected).status;
    const dir = path.dirname(logPath);
    const base = path.basename(logPath);

    const rotatedSeen = new Set<string>();
    let maxFilesSeen = 0;
    let maxCurrentBytes = 0;
    let polls = 0;
    const startedMs = Date.now();
    // At most one check period of writing on top of the size, with a period of slack for a slow check.
    const bound = MAX_SIZE_BYTES + 2 * CHECK_PERIOD_S * 50 * 130;
    while (rotatedSeen.size < 4 && Date.now() - startedMs < 150_000) {
      const files = (await readdir(dir)).filter((n) => n === base || n.startsWith(`${base}.`));
      for (const name of files) if (name !== base) rotatedSeen.add(name);
      const current = await stat(logPath).then((s) => s.size, () => 0);
      polls += 1;
      maxFilesSeen = Math.max(maxFilesSeen, files.length);
      maxCurrentBytes = Math.max(maxCurrentBytes, current);
      assert.ok(files.length <= MAX_FILES, `at most ${MAX_FILES} files, saw ${files.join(' ')}`);
      assert.ok(current <= bound, `current file ${current} bytes, bound ${bound}`);
      await sleep(1000);
    }
    const elapsedS = (Date.now() - startedMs) / 1000;
    console.log(`log rotation: ${rotatedSeen.size} distinct rotated files in ${elapsedS.toFixed(1)} s over ${polls} polls; at most ${maxFilesSeen} files at once (limit ${MAX_FILES}); current file at most ${maxCurrentBytes} bytes (size ${MAX_SIZE_BYTES}, bound ${bound})`);
    assert.ok(rotatedSeen.size >= 4, `at least 4 rotations, saw ${[...rotatedSeen].join(' ')}`);
    for (const name of rotatedSeen) assert.match(name, new RegExp(`^${base.replace('.', '\\.')}\\.\\d{8}-\\d{6}$`), 'with maxFiles 2 nothing is kept long enough to be compressed');

    // The rotated file ends where the current one begins: read the rotated one first, so a rotation in between shows as a gap we skip.
    const boundary = await eventually('a rotated file and the current one read within one check period', async () => {
      const files = (await readdir(dir)).filter((n) => n.startsWith(`${base}.`));
      const rotated = files[0];
      if (files.length !== 1 || rotated === undefined) return undefined;
      const older = numbersOf(await readFile(path.join(dir, rotated), 'utf8'));
      const newer = numbersOf(await readFile(logPath, 'utf8'));
      const stillThere = (await readdir(dir)).includes(rotated);
      return stillThere && newer.length > 0 && older.length > 0 ? { older, newer } : undefined;
    });
    assert.ok(consecutive(boundary.older) && consecutive(boundary.newer), 'no line lost inside either file');
    assert.equal(boundary.newer[0], (boundary.older.at(-1) ?? 0) + 1, 'the current file starts with the line after the rotated file\'s last');
    console.log(`log rotation: rotated file lines ${boundary.older[0]}..${boundary.older.at(-1)}, current file from ${boundary.newer[0]}`);

    const logs = (await kubectl(['logs', '-n', namespace, 'writer'])).split('\n').filter((l) => l !== '');
    const numbers = logs.map((l) => Number(l.split(' ')[0]));
    assert.ok(numbers.length > 0, 'kubectl logs answers with the current file');
    assert.ok(consecutive(numbers), 'kubectl logs lines are consecutive');
    assert.ok(logs.every((l) => /^\d+ 0123456789abcdef/.test(l)));
    console.log(`log rotation: kubectl logs returned ${numbers.length} lines (${numbers[0]}..${numbers.at(-1)})`);

    const inspected = (JSON.parse(await crictl(['inspect', '-o', 'json', id])) as Inspected).status;
    assert.equal(inspected.state, 'CONTAINER_RUNNING');
    assert.equal(inspected.metadata.attempt, 0);
    const after = (await crictl(['ps', '-a', '--label', `io.kubernetes.pod.uid=${uid}`, '-q'])).split('\n').filter((l) => l !== '');
    assert.deepEqual(after, [id], 'the same single container instance');
    const status = (await getPod(namespace, 'writer'))?.status?.containerStatuses?.[0];
    assert.equal(status?.restartCount, 0);
    assert.ok(status?.state?.running !== undefined);
  });
});
