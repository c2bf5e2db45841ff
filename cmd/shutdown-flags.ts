/**
 * Graceful node shutdown's flags: the KubeletConfiguration's `shutdownGracePeriod`,
 * `shutdownGracePeriodCriticalPods` and `shutdownGracePeriodByPodPriority` (the kubelet has them in
 * its config file only; `--config` maps them here), and where the logind drop-in goes. All zero
 * (the kubelet's default): graceful shutdown is off and nodelet does not talk to logind.
 */
import { InvalidShutdownSettingsError, validateShutdownSettings, type ShutdownGroupPeriod, type ShutdownSettings } from '../controllers/shutdown/shutdown-plan.js';
import { LOGIND_CONF_DIR } from '../controllers/shutdown/logind.js';
import { FlagError, secondsOrDuration, type FlagSpecs } from '../util/flags.js';

/** The longest period accepted (a day: a host is not held longer). */
const MAX_SECONDS = 86_400;

export const SHUTDOWN_FLAGS = {
  'shutdown-grace-period': { type: 'string', value: 'DURATION', default: '0', description: 'how long the node delays its shutdown for its pods (logind inhibitor); 0: graceful node shutdown off' },
  'shutdown-grace-period-critical-pods': { type: 'string', value: 'DURATION', default: '0', description: 'the part of --shutdown-grace-period kept for critical pods, stopped last' },
  'shutdown-grace-period-by-pod-priority': { type: 'string', value: 'PRIORITY=DURATION,...', default: '', description: 'shutdown groups instead of the two above: pods from PRIORITY up get DURATION (e.g. 0=20s,2000000000=10s)' },
  'logind-conf-dir': { type: 'string', value: 'DIR', default: LOGIND_CONF_DIR, description: "where the drop-in raising logind's InhibitDelayMaxSec is written when it is too short" },
} as const satisfies FlagSpecs;

interface ShutdownFlagValues {
  readonly 'shutdown-grace-period': string;
  readonly 'shutdown-grace-period-critical-pods': string;
  readonly 'shutdown-grace-period-by-pod-priority': string;
  readonly 'logind-conf-dir': string;
}

/** The settings graceful node shutdown is built from. */
export interface NodeShutdownSettings extends ShutdownSettings {
  readonly logindConfDir: string;
}

function byPodPriority(raw: string): ShutdownGroupPeriod[] {
  if (raw.trim() === '') return [];
  return raw.split(',').map((entry) => {
    const match = /^\s*(-?\d+)=(\S+)\s*$/.exec(entry);
    if (match === null) throw new FlagError(`--shutdown-grace-period-by-pod-priority: "${entry}" is not PRIORITY=DURATION`);
    const priority = Number(match[1]);
    if (!Number.isSafeInteger(priority) || Math.abs(priority) > 2 ** 31) throw new FlagError(`--shutdown-grace-period-by-pod-priority: priority "${match[1] ?? ''}" is not a 32-bit integer`);
    return { priority, shutdownGracePeriodSeconds: secondsOrDuration('shutdown-grace-period-by-pod-priority', match[2] ?? '', MAX_SECONDS) };
  });
}

/** The flags as settings. @throws FlagError on what the kubelet's validation refuses. */
export function parseShutdownFlags(values: ShutdownFlagValues): NodeShutdownSettings {
  const settings: NodeShutdownSettings = {
    gracePeriodSeconds: secondsOrDuration('shutdown-grace-period', values['shutdown-grace-period'], MAX_SECONDS),
    criticalPodsGracePeriodSeconds: secondsOrDuration('shutdown-grace-period-critical-pods', values['shutdown-grace-period-critical-pods'], MAX_SECONDS),
    byPodPriority: byPodPriority(values['shutdown-grace-period-by-pod-priority']),
    logindConfDir: values['logind-conf-dir'],
  };
  try {
    validateShutdownSettings(settings);
  } catch (error) {
    if (error instanceof InvalidShutdownSettingsError) throw new FlagError(`graceful node shutdown: ${error.message}`);
    throw error;
  }
  return settings;
}
