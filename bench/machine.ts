/**
 * The machine and the versions a benchmark ran on, for the results' header.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { VersionApi, type KubeConfig } from '@kubernetes/client-node';
import type { RuntimeService } from '../cri/types.js';

const run = promisify(execFile);

export interface MachineInfo {
  /** ISO date and time of the run (UTC). */
  readonly date: string;
  readonly cpus: number;
  readonly cpuModel: string;
  readonly memoryGiB: number;
  readonly kernel: string;
  readonly os: string;
  readonly node: string;
  readonly containerd: string;
  readonly kubernetes: string;
  /** package.json version and the git commit (with `-dirty` when the tree has changes). */
  readonly nodelet: string;
}

async function osName(): Promise<string> {
  const text = await readFile('/etc/os-release', 'utf8').catch(() => '');
  return /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(text)?.[1] ?? os.type();
}

async function nodeletVersion(repoDir: string): Promise<string> {
  const pkg = JSON.parse(await readFile(path.join(repoDir, 'package.json'), 'utf8')) as { version: string };
  try {
    const { stdout: sha } = await run('git', ['-C', repoDir, 'rev-parse', '--short', 'HEAD']);
    const { stdout: status } = await run('git', ['-C', repoDir, 'status', '--porcelain', '--untracked-files=no']);
    return `${pkg.version} (${sha.trim()}${status.trim() === '' ? '' : '-dirty'})`;
  } catch {
    return pkg.version;
  }
}

export async function describeMachine(options: { runtime: RuntimeService; kubeConfig: KubeConfig; repoDir: string }): Promise<MachineInfo> {
  const [runtimeVersion, serverVersion, osPretty, nodelet] = await Promise.all([
    options.runtime.version(),
    options.kubeConfig.makeApiClient(VersionApi).getCode(),
    osName(),
    nodeletVersion(options.repoDir),
  ]);
  return {
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    kernel: os.release(),
    os: osPretty,
    node: process.version,
    containerd: `${runtimeVersion.runtimeName} ${runtimeVersion.runtimeVersion}`,
    kubernetes: serverVersion.gitVersion,
    nodelet,
  };
}
