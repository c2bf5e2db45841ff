import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { agentFreeCeilingPodsPerSecond, ceilingPodsPerSecond, classifyProcess, renderCpuSplit, roundRatios, splitCpu, type CpuRoles, type CpuSplitSample } from './cpu-split-report.js';
import { parseMachineStat, parseProcessStat, type CpuSnapshot, type ProcessCpu } from './machine-cpu.js';
import type { MachineInfo } from './machine.js';

const proc = (pid: number, ppid: number, name: string, cpuSeconds: number): ProcessCpu => ({ pid, ppid, name, startTicks: 100, cpuSeconds });
const roles: CpuRoles = { agentPid: 50, benchPid: 60, withQueue: true };
const machine = (busySeconds: number, idleSeconds: number): CpuSnapshot['machine'] => ({ busySeconds, idleSeconds });

describe('process CPU from /proc', () => {
  it('reads pid, ppid, name (with spaces and parentheses), start time and own plus reaped children CPU from a stat line', () => {
    // Fields 14-17 (utime, stime, cutime, cstime) are 300 50 120 30 ticks; starttime (22) is 4242.
    const line = '1234 (containerd-shim (x)) S 1 1234 1234 0 -1 4194560 100 0 0 0 300 50 120 30 20 0 12 0 4242 1000 200 18446744073709551615';
    assert.deepEqual(parseProcessStat(line, 100), { pid: 1234, ppid: 1, name: 'containerd-shim (x)', startTicks: 4242, cpuSeconds: 5 });
    assert.equal(parseProcessStat('garbage', 100), undefined);
  });

  it("reads the machine's busy time (user, nice, system, irq, softirq, steal) and idle time (idle, iowait)", () => {
    const stat = 'cpu  100 10 50 1000 40 5 5 30 0 0\ncpu0 50 5 25 500 20 2 3 15 0 0\n';
    assert.deepEqual(parseMachineStat(stat, 100), { busySeconds: 2, idleSeconds: 10.4 });
  });
});

describe('the CPU split', () => {
  const shim = proc(300, 1, 'containerd-shim', 1);
  const byPid = new Map([shim, proc(301, 300, 'pause', 0), proc(302, 300, 'sh', 0), proc(303, 302, 'sleep', 0)].map((p) => [p.pid, p]));

  it('puts the agent, the bench, Redis, the control plane, kernel threads, the runtime and the containers in their groups', () => {
    const group = (p: ProcessCpu, r: CpuRoles = roles): string => classifyProcess(p, byPid, r);
    assert.equal(group(proc(50, 1, 'node', 0)), 'agent');
    assert.equal(group(proc(60, 1, 'node', 0)), 'bench client');
    assert.equal(group(proc(70, 1, 'node', 0)), 'other');
    assert.equal(group(proc(80, 1, 'redis-server', 0)), 'queue (Redis)');
    assert.equal(group(proc(80, 1, 'redis-server', 0), { ...roles, withQueue: false }), 'other');
    for (const name of ['kube-apiserver', 'etcd', 'kube-scheduler', 'kube-controller', 'metrics-server']) assert.equal(group(proc(90, 1, name, 0)), 'control plane', name);
    assert.equal(group(proc(2, 0, 'kthreadd', 0)), 'kernel threads');
    assert.equal(group(proc(95, 2, 'kworker/u8:2-writeback', 0)), 'kernel threads');
    for (const name of ['containerd', 'containerd-shim', 'runc']) assert.equal(group(proc(96, 1, name, 0)), 'runtime', name);
    assert.equal(group(byPid.get(303)!), 'runtime', "a container's process, two levels under its shim");
    assert.equal(group(proc(97, 1, 'sleep', 0)), 'other', 'a sleep that is no container');
  });

  it("counts each process's CPU between the snapshots, a new process whole, and a reused pid as a new process", () => {
    const before: CpuSnapshot = { processes: [proc(50, 1, 'node', 10), proc(90, 1, 'kube-apiserver', 20), proc(400, 1, 'containerd', 5)], machine: machine(100, 50) };
    const after: CpuSnapshot = {
      processes: [proc(50, 1, 'node', 12.5), proc(90, 1, 'kube-apiserver', 21), { ...proc(400, 1, 'containerd', 3), startTicks: 900 }, proc(300, 1, 'containerd-shim', 0.5), proc(2, 0, 'kthreadd', 0)],
      machine: machine(108, 51),
    };
    const split = splitCpu(before, after, roles);
    assert.equal(split.groups.agent, 2.5);
    assert.equal(split.groups['control plane'], 1);
    assert.equal(split.groups.runtime, 3.5, 'pid 400 started again (another start time): all its 3 s, plus the new shim');
    assert.equal(split.busySeconds, 8);
    assert.equal(split.idleSeconds, 1);
  });

  it('renders per-pod milliseconds by group and path, and the ceiling the CPU per pod allows', () => {
    const sample = (target: CpuSplitSample['target'], round: number, agent: number, busy: number): CpuSplitSample => ({
      target,
      round,
      pods: 100,
      running: 100,
      windowSeconds: 10,
      split: { groups: { agent, 'queue (Redis)': 0, 'control plane': 2, runtime: 15, 'kernel threads': 1, 'bench client': 0.5, other: 0.5 }, busySeconds: busy, idleSeconds: 1 },
    });
    const samples = [sample('nodelet', 1, 2, 20), sample('nodelet', 2, 3, 22), sample('nodelet', 3, 4, 24), sample('raw CRI', 1, 0, 16)];
    assert.equal(ceilingPodsPerSecond(samples[0]!, 2), 10);
    assert.equal(agentFreeCeilingPodsPerSecond(samples[0]!, 2), 200 / 18, "the machine's 20 s less the agent's 2 s");
    assert.deepEqual(roundRatios([...samples, sample('raw CRI', 3, 0, 12)], 'raw CRI', (s) => s.split.busySeconds), [20 / 16, 24 / 12]);
    const info = { date: 'D', cpus: 2, cpuModel: 'M', memoryGiB: 1, kernel: 'K', os: 'O', node: 'N', containerd: 'C', kubernetes: 'V', nodelet: 'X' } satisfies MachineInfo;
    const block = renderCpuSplit({ machine: info, command: 'npm run bench:cpu', samples });
    assert.match(block, /\| ms of CPU per pod \| nodelet \| raw CRI \|/);
    assert.match(block, /\| agent \| 20\.0 \/ \*\*30\.0\*\* \/ 40\.0 \| 0\.0 \/ \*\*0\.0\*\* \/ 0\.0 \|/);
    assert.match(block, /\| \*\*machine busy\*\* \(\/proc\/stat\) \| 200\.0 \/ \*\*220\.0\*\* \/ 240\.0 \| 160\.0 \/ \*\*160\.0\*\* \/ 160\.0 \|/);
    assert.match(block, /ceiling at that CPU per pod, 2 cores ÷ machine busy per pod, pods\/s \| 8\.33 \/ \*\*9\.09\*\* \/ 10\.00 \| 12\.50/);
    assert.doesNotMatch(block, /\| nodelet \| kubelet/, 'no column for a path without samples');
    assert.match(block, /\| machine busy per pod \| n\/a \| \*\*1\.25×\*\* \(1\.25–1\.25\) \|/, 'only round 1 has raw CRI: 200 ÷ 160');
    assert.match(block, /\| ceiling if nodelet's agent and queue cost nothing, ÷ the other path's ceiling \| n\/a \| \*\*0\.89×\*\* \(0\.89–0\.89\) \|/, "2 × 100 ÷ (20 − 2) against raw CRI's 2 × 100 ÷ 16");
    const small = { ...sample('nodelet', 1, 1, 4), pods: 30 };
    const twoSizes = renderCpuSplit({ machine: info, command: 'npm run bench:cpu', samples: [small, { ...sample('kubelet', 1, 1, 5), pods: 30 }, ...samples] });
    assert.match(twoSizes, /30 and 100 pods created at once/);
    assert.match(twoSizes, /### 30 pods\n\n\| ms of CPU per pod \| nodelet \| kubelet \|[^#]*\| machine busy per pod \| \*\*0\.80×\*\* \(0\.80–0\.80\) \| n\/a \|[^#]*### 100 pods\n\n\| ms of CPU per pod \| nodelet \| raw CRI \|/, 'each size its own tables and ratios, 4 ÷ 5 at 30 pods');
  });
});
