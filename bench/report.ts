/**
 * The pod-startup results as markdown, and their place in `docs/benchmarks.md`: the block between
 * the two markers is replaced on every run; the prose around it is kept (and written with a
 * default intro when the file does not exist yet).
 */
import { readFile, writeFile } from 'node:fs/promises';

export const BEGIN_MARKER = '<!-- BEGIN pod-startup results: written by bench/pod-startup.ts, do not edit by hand -->';
export const END_MARKER = '<!-- END pod-startup results -->';

export const DEFAULT_INTRO = `# Benchmarks

## Pod startup (\`bench/pod-startup.ts\`)

The same workloads through three paths on this machine, alternating: **nodelet** (the test
cluster's node), **the kubelet** v1.36.3 of the same release (a second node of the same cluster on a
containerd of its own, \`npm run kubelet:up\`: see \`test/cluster/README.md\`), and **raw CRI** (the
project's CRI client driving nodelet's containerd directly, no API server, queue or agent:
RunPodSandbox + CreateContainer + StartContainer per pod with the configs the agent builds, at the
agent's worker concurrency). Every round runs each path once per N, in an order rotated every
round; while one path is measured no other pod runs on either node.

- **create → Running**: N busybox pods (\`sleep 3600\`, image present, no service account token),
  created through the API at once, bound to the node by name, in a namespace of their own. Latency
  per pod from the moment the batch was issued to the first watch event showing it Running, so it
  includes its wait behind the others; p50, p99, and throughput = pods Running ÷ the time to the
  last. Above maxPods (110) the node rejects the rest at admission (phase Failed): counted apart.
- **delete → gone**: all N deleted at once; until every pod object has left the API and the node's
  runtime is done with their sandboxes. nodelet stops and removes a pod's sandbox as it finishes the
  pod: for it, every sandbox removed. The kubelet stops it and removes it only in its
  once-a-minute garbage collection: for it, every sandbox stopped (a removal would measure its GC
  period). Raw CRI: StopPodSandbox + RemovePodSandbox at the same concurrency.
- **agent CPU and RSS**: utime + stime of the agent's process (\`/proc/<pid>/stat\`) over create and
  delete, per pod; peak VmRSS sampled every 100 ms over the batch (for N = 110 its idle window
  included). Only the agent: neither
  containerd nor the API server.
- **idle**: in the batch of 110 pods, 10 s after the last is Running, the agent's CPU over a window
  (\`--idle-s\`), in millicores, and its RSS at the end of it.
- **status freshness**: pods (restartPolicy Never) whose containers exit on their own at set points
  of the host's clock, one relist interval of the agent plus 1/K of it apart; per pod the
  wall-clock time a watch first saw the container terminated in the API minus the exit time the
  runtime recorded (CRI \`finishedAt\`).
- **steady 1 pod/s**: one pod created every second on a fixed schedule for \`--steady-s\`, each
  deleted once Running and \`--steady-life-s\` after its create; p50 and p99 create → Running, and the
  agent's CPU per pod over the run.

The headline is the ratio nodelet ÷ kubelet and nodelet ÷ raw CRI per measure: within each round
(the paths ran back to back), then the median over the rounds, with the range.

Run it on the test cluster, with nothing else running on it (\`npm run cluster:up\` first); it brings
the kubelet node up and removes it again at the end:

\`\`\`sh
npm run bench                          # N = 30, 110, 250; 3 rounds; 300 s steady; rewrites the results below
npm run bench -- --sizes 30,110 --rounds 3 --steady-s 60
npm run bench -- --sizes 10 --rounds 1 --steady-s 20 --no-doc   # a quick look, printed only
\`\`\`

A small VM and runs vary: compare the ratios within one run, not absolute times across runs or
machines.
`;

/** The markers around one benchmark's results block. */
export interface ResultMarkers {
  readonly begin: string;
  readonly end: string;
}

const POD_STARTUP_MARKERS: ResultMarkers = { begin: BEGIN_MARKER, end: END_MARKER };

/** Replaces (or adds) the results block between `markers` in the document at `docPath`, creating it when missing. */
export async function writeResultsBlock(docPath: string, block: string, markers: ResultMarkers = POD_STARTUP_MARKERS): Promise<void> {
  const existing = await readFile(docPath, 'utf8').catch(() => undefined);
  await writeFile(docPath, updateDocument(existing, block, markers));
}

/** The document with its results block replaced (or appended, or under the default intro when there is no document). */
export function updateDocument(existing: string | undefined, block: string, markers: ResultMarkers = POD_STARTUP_MARKERS): string {
  if (existing === undefined || existing.trim() === '') return `${DEFAULT_INTRO}\n${block}\n`;
  const begin = existing.indexOf(markers.begin);
  const end = existing.indexOf(markers.end);
  if (begin < 0 || end < begin) return `${existing.trimEnd()}\n\n${block}\n`;
  return existing.slice(0, begin) + block + existing.slice(end + markers.end.length);
}
