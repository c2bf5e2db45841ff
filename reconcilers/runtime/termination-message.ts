/**
 * Termination messages, as the kubelet handles them: each container gets a host file mounted at
 * its `terminationMessagePath` (default `/dev/termination-log`); when the container exits, the file's
 * first 4096 bytes become `state.terminated.message`. With `terminationMessagePolicy:
 * FallbackToLogsOnError`, a container that failed and wrote no message gets the tail of its log
 * instead (the last 80 lines, at most 2048 bytes).
 *
 * Host files live under the pod's directory (`<root>/pods/<uid>/containers/<name>/`), so the
 * pod's cleanup removes them; their path is kept in a container annotation so a restarted agent
 * finds them again.
 */
import { chmod, mkdir, open, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Mount } from '../../cri/types.js';

export const ANNOTATION_TERMINATION_MESSAGE_HOST_PATH = 'nodelet.dev/termination-message-host-path';

const MAX_MESSAGE_BYTES = 4096;
const MAX_LOG_TAIL_LINES = 80;
const MAX_LOG_TAIL_BYTES = 2048;

/** Creates the (empty) host file for a container instance and returns its mount and path. */
export async function prepareTerminationMessageFile(options: {
  readonly rootDir: string;
  readonly podUid: string;
  readonly containerName: string;
  readonly restartCount: number;
  readonly containerPath: string;
}): Promise<{ mount: Mount; hostPath: string }> {
  const dir = path.join(options.rootDir, 'pods', options.podUid, 'containers', options.containerName);
  await mkdir(dir, { recursive: true, mode: 0o750 });
  const hostPath = path.join(dir, `termination-log-${options.restartCount}`);
  await writeFile(hostPath, '', { mode: 0o666 });
  // The mode given at creation is cut by the agent's umask (0644 under the usual 022); a container
  // running as any user must be able to write its termination message, so set it explicitly, as
  // the kubelet does.
  await chmod(hostPath, 0o666);
  return { mount: { containerPath: options.containerPath, hostPath }, hostPath };
}

async function readHead(file: string, maxBytes: number): Promise<string> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(maxBytes);
    const { bytesRead } = await handle.read(buffer, 0, maxBytes, 0);
    return buffer.subarray(0, bytesRead).toString('utf8');
  } finally {
    await handle.close();
  }
}

/** The message text of CRI log lines (`<time> <stream> <F|P> <text>`), joined as the container wrote them. */
export function criLogText(log: string): string {
  let out = '';
  for (const line of log.split('\n')) {
    const match = /^\S+ (?:stdout|stderr) ([FP]) (.*)$/.exec(line);
    if (match === null) continue;
    out += match[2] ?? '';
    if (match[1] === 'F') out += '\n';
  }
  return out;
}

/** The last `MAX_LOG_TAIL_LINES` lines of text, at most `MAX_LOG_TAIL_BYTES` bytes (the end is kept). */
export function logTail(text: string): string {
  const lines = text.replace(/\n$/, '').split('\n').slice(-MAX_LOG_TAIL_LINES).join('\n');
  const bytes = Buffer.from(lines, 'utf8');
  return bytes.length <= MAX_LOG_TAIL_BYTES ? lines : bytes.subarray(bytes.length - MAX_LOG_TAIL_BYTES).toString('utf8');
}

/** The termination message of an exited container, or '' when it has none. Never throws. */
export async function readTerminationMessage(c: {
  readonly hostPath: string | undefined;
  readonly policy: string | undefined;
  readonly exitCode: number;
  readonly logPath: string;
}): Promise<string> {
  let message = '';
  if (c.hostPath !== undefined) message = await readHead(c.hostPath, MAX_MESSAGE_BYTES).catch(() => '');
  if (message === '' && c.policy === 'FallbackToLogsOnError' && c.exitCode !== 0 && c.logPath !== '') {
    message = logTail(criLogText(await readFile(c.logPath, 'utf8').catch(() => '')));
  }
  return message;
}
