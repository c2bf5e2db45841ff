/**
 * The pods' user namespaces (`reconcilers/userns/`): the node's host IDs from
 * `--user-namespaces-host-ids` (or the `nodelet` user's subordinate IDs, or the kubelet's default),
 * checked as the kubelet checks them at start, and every range a pod directory already holds
 * read back before the first pod is synced.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { SUBORDINATE_ID_USER, type UserNamespaceHostIds } from '../userns-flags.js';
import { IDS_PER_POD, nodeIdRange, subordinateIdsOf, type SubordinateIdSource } from '../../reconcilers/userns/id-range.js';
import { UserNamespaceManager } from '../../reconcilers/userns/userns-manager.js';
import type { AgentCore } from './core.js';

const run = promisify(execFile);

/** The host's users (/etc/passwd, as Go's user.Lookup reads it without cgo) and its getsubids. */
const hostSubordinateIds: SubordinateIdSource = {
  userExists: async (user) => {
    const passwd = await readFile('/etc/passwd', 'utf8').catch(() => '');
    return passwd.split('\n').some((line) => line.startsWith(`${user}:`));
  },
  getSubIds: async (user, groups) => {
    try {
      return (await run('getsubids', groups ? ['-g', user] : [user], { timeout: 10_000 })).stdout;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  },
};

async function hostIdsOf(setting: UserNamespaceHostIds): Promise<{ firstId: number; length: number } | undefined> {
  switch (setting.kind) {
    case 'off':
      return undefined;
    case 'range':
      return { firstId: setting.firstId, length: setting.length };
    case 'lookup':
      return subordinateIdsOf(SUBORDINATE_ID_USER, hostSubordinateIds, IDS_PER_POD);
  }
}

/**
 * Builds the manager and loads the ranges on disk.
 * @throws UserNamespaceRangeError or UserNamespaceError: the agent does not start (as the kubelet)
 */
export async function buildUserNamespaces(core: AgentCore): Promise<UserNamespaceManager> {
  const { settings, logger } = core;
  const hostIds = await hostIdsOf(settings.userNamespaceHostIds);
  const range = hostIds === undefined ? undefined : nodeIdRange(hostIds, { idsPerPod: IDS_PER_POD, maxPods: settings.maxPods });
  const manager = new UserNamespaceManager({
    rootDir: settings.rootDir,
    range,
    offReason: 'user namespaces are off on this node (--user-namespaces-host-ids=none)',
    random: Math.random,
  });
  const held = await manager.loadFromDisk();
  logger.info({ firstId: hostIds?.firstId, length: hostIds?.length, podsHoldingRanges: held }, range === undefined ? 'user namespaces off' : 'user namespace ranges');
  return manager;
}
