/**
 * The container log rotation flags, under the kubelet's names and with its defaults (10Mi, 5).
 * They are the rotation policy's base: the NodeAgent's `spec.logRotation` fields override them one
 * by one, and an unset field returns to the flag.
 */
import { DEFAULT_LOG_ROTATION, isLogSize, type LogRotationSettings } from '../controllers/nodeagent/settings.js';
import { FlagError, type FlagSpecs } from '../util/flags.js';

export const LOG_ROTATION_FLAGS = {
  'container-log-max-size': { type: 'string', value: 'SIZE', default: DEFAULT_LOG_ROTATION.containerLogMaxSize, description: 'size (e.g. 10Mi) at which a container log is rotated' },
  'container-log-max-files': { type: 'string', value: 'N', default: String(DEFAULT_LOG_ROTATION.containerLogMaxFiles), description: 'log files kept per container, the current one included (at least 2)' },
} as const satisfies FlagSpecs;

interface LogRotationFlagValues {
  readonly 'container-log-max-size': string;
  readonly 'container-log-max-files': string;
}

/** @throws FlagError on a size that is not a positive whole quantity, or fewer than 2 files (the kubelet refuses both). */
export function parseLogRotationFlags(values: LogRotationFlagValues): LogRotationSettings {
  const size = values['container-log-max-size'];
  if (!isLogSize(size)) throw new FlagError(`--container-log-max-size must be a positive quantity such as 10Mi, got "${size}"`);
  const files = values['container-log-max-files'];
  if (!/^\d+$/.test(files) || Number(files) < 2) throw new FlagError(`--container-log-max-files must be an integer of at least 2, got "${files}"`);
  return { containerLogMaxSize: size, containerLogMaxFiles: Number(files) };
}
