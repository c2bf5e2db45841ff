/**
 * Where an agent's CPU went, from a V8 CPU profile (`NODELET_AGENT_NODE_ARGS='--cpu-prof
 * --diagnostic-dir=DIR'` on the test cluster; the profile is written when the agent exits): the
 * busy time (every sample but idle), and for each pattern the share of busy samples with a frame
 * whose script URL or function name contains it anywhere on the stack (inclusive, so shares of
 * nested code overlap). Not a test: it asserts nothing.
 *
 *   node --import tsx bench/profile-share.ts PROFILE.cpuprofile /kube/ grpc-js bullmq 'garbage collector'
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string };
  readonly children?: readonly number[];
}
interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

function main(): void {
  const [file, ...patterns] = process.argv.slice(2);
  if (file === undefined || patterns.length === 0) throw new Error('usage: profile-share.ts PROFILE.cpuprofile PATTERN...');
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  const timeById = new Map<number, number>();
  profile.samples.forEach((id, i) => timeById.set(id, (timeById.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  let busy = 0;
  const shares = new Map(patterns.map((p) => [p, 0]));
  for (const [id, micros] of timeById) {
    if (byId.get(id)?.callFrame.functionName === '(idle)') continue;
    busy += micros;
    const stack: string[] = [];
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const frame = byId.get(cur)?.callFrame;
      if (frame !== undefined) stack.push(`${frame.url} ${frame.functionName}`);
    }
    for (const p of patterns) if (stack.some((f) => f.includes(p))) shares.set(p, (shares.get(p) ?? 0) + micros);
  }
  console.log(`busy ${(busy / 1e6).toFixed(2)} s`);
  for (const [p, micros] of shares) console.log(`${p.padEnd(24)} ${(micros / 1e6).toFixed(2)} s ${((100 * micros) / busy).toFixed(1)}%`);
}

main();
