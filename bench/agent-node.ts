/**
 * A node the benchmark drives through the API: nodelet's node or the kubelet's (test/cluster/
 * kubelet-up.sh), each with its agent process and its own containerd.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { createCriClient, type CriClient } from '../cri/grpc-client.js';
import type { RuntimeService } from '../cri/types.js';

/** One agent's node, as the benchmark sees it. */
export interface AgentNode {
  readonly target: 'nodelet' | 'kubelet';
  readonly nodeName: string;
  /** The agent's process (CPU and RSS are read from /proc/<pid>). */
  readonly pid: number;
  /** The node's own runtime (its containerd). */
  readonly runtime: RuntimeService;
  /**
   * When a deleted pod counts as gone from the runtime: nodelet removes a pod's sandbox when it
   * deletes the pod; the kubelet stops it and removes it only in its once-a-minute garbage
   * collection, so for it "every sandbox stopped" is the comparable point.
   */
  readonly sandboxGoneWhen: 'removed' | 'stopped';
}

/** The pid a harness pid file names, if that process runs and its command line contains `marker`. */
export async function pidFromFile(file: string, marker: string): Promise<number> {
  const pid = Number.parseInt((await readFile(file, 'utf8')).split('\n')[0]?.trim() ?? '', 10);
  const cmdline = Number.isInteger(pid) ? await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '') : '';
  if (!cmdline.includes(marker)) throw new Error(`${marker} is not running (${file} names ${String(pid)})`);
  return pid;
}

/** Sandboxes of the namespace's pods the runtime still holds in a state that is not "gone" for the node. */
export async function sandboxesPending(node: AgentNode, namespace: string): Promise<number> {
  const sandboxes = await node.runtime.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.namespace': namespace } });
  return node.sandboxGoneWhen === 'removed' ? sandboxes.length : sandboxes.filter((s) => s.state === 'SANDBOX_READY').length;
}

/** Unfinished pods bound to a node: the benchmark's own (namespaces `bench-*`) and the others. */
export async function activePodsOn(kubeConfig: KubeConfig, nodeName: string): Promise<{ bench: number; other: number }> {
  const pods = await kubeConfig.makeApiClient(CoreV1Api).listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${nodeName}` });
  const active = pods.items.filter((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed');
  const bench = active.filter((p) => (p.metadata?.namespace ?? '').startsWith('bench-')).length;
  return { bench, other: active.length - bench };
}

/** The kubelet node's own report of its version and runtime (its Node's nodeInfo). */
export async function nodeInfo(kubeConfig: KubeConfig, nodeName: string): Promise<{ version: string; runtime: string }> {
  const node = await kubeConfig.makeApiClient(CoreV1Api).readNode({ name: nodeName });
  return { version: node.status?.nodeInfo?.kubeletVersion ?? 'unknown', runtime: node.status?.nodeInfo?.containerRuntimeVersion ?? 'unknown' };
}

/** An environment variable the cluster's env files set; throws naming them when it is missing. */
export function requireEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set: source .cluster/env and .cluster/kubelet/env (bench/run.sh does)`);
  return value;
}

/** The benchmark's agent nodes and a CRI client of each node's runtime (close every one of `clients`). */
export interface ConnectedNodes {
  /** nodelet's node first, then the kubelet's when asked for. */
  readonly nodes: AgentNode[];
  readonly clients: CriClient[];
  /** The client of nodelet's node's containerd, which raw CRI drives too. */
  readonly nodeletRuntime: CriClient;
}

/** nodelet's node (the harness's pid file under `clusterDir`) and, `withKubelet`, the kubelet's (its env file's). */
export async function connectNodes(options: { clusterDir: string; withKubelet: boolean }): Promise<ConnectedNodes> {
  const nodeletRuntime = createCriClient({ endpoint: requireEnv('CONTAINER_RUNTIME_ENDPOINT'), defaultTimeoutMs: 120_000 });
  const nodes: AgentNode[] = [
    { target: 'nodelet', nodeName: requireEnv('NODE_NAME'), pid: await pidFromFile(path.join(options.clusterDir, 'pids', 'nodelet.pid'), 'nodelet'), runtime: nodeletRuntime.runtime, sandboxGoneWhen: 'removed' },
  ];
  const clients = [nodeletRuntime];
  if (options.withKubelet) {
    const kubeletRuntime = createCriClient({ endpoint: requireEnv('KUBELET_CRI_ENDPOINT'), defaultTimeoutMs: 120_000 });
    clients.push(kubeletRuntime);
    nodes.push({ target: 'kubelet', nodeName: requireEnv('KUBELET_NODE_NAME'), pid: await pidFromFile(requireEnv('KUBELET_PID_FILE'), 'kubelet'), runtime: kubeletRuntime.runtime, sandboxGoneWhen: 'stopped' });
  }
  return { nodes, clients, nodeletRuntime };
}

/** Throws when an agent restarted during the run: its CPU and memory figures would be meaningless. */
export async function checkAgentsStillRunning(nodes: readonly AgentNode[]): Promise<void> {
  for (const node of nodes) {
    const cmdline = await readFile(`/proc/${node.pid}/cmdline`, 'utf8').catch(() => '');
    if (!cmdline.includes(node.target)) throw new Error(`the ${node.target} agent (pid ${node.pid}) exited during the run`);
  }
}
