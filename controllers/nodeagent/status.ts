/**
 * The NodeAgent's `status` as a pure function of one health sample, the settings report and the
 * status the API server holds now. Conditions follow `metav1.Condition`: a condition's
 * `lastTransitionTime` moves only when its `status` changes from what was held before.
 * SettingsApplied does not affect Ready: a refused or failed setting says so in SettingsApplied and
 * leaves the node serving pods.
 */
import type { NodeAgentCondition, NodeAgentConditionType, NodeAgentQueueStatus, NodeAgentStatus } from './types.js';
import type { SettingProblem } from './settings.js';

/** Whether a part works, with its own explanation when it does not. */
export interface Readiness {
  readonly ready: boolean;
  /** Machine-readable cause (a condition reason, CamelCase); ignored when ready. */
  readonly reason: string;
  readonly message: string;
}

/** Job counts of the queue (a subset of the queue's `QueueCounts`). */
export interface QueueJobCounts {
  readonly waiting: number;
  readonly active: number;
  readonly delayed: number;
  readonly failed: number;
}

/** What the agent's parts said at one moment (see `health-probes.ts`). */
export interface HealthSample {
  readonly runtime: Readiness;
  readonly queue: Readiness;
  readonly api: Readiness;
  /** Undefined when they could not be read (Redis down): the previous counts are kept. */
  readonly queueCounts: QueueJobCounts | undefined;
  /** Pods bound to the node that are not in a terminal phase. */
  readonly pods: number;
  /** `<runtime>://<version>`, undefined when unknown. */
  readonly runtimeVersion: string | undefined;
  /** Epoch milliseconds of the last successful runtime relist, undefined before the first. */
  readonly lastRelistMs: number | undefined;
}

/** How the spec was applied. */
export interface SettingsReport {
  /** Setters that threw; the setting keeps its previous value. */
  readonly applyFailures: readonly SettingProblem[];
  /** Spec fields refused by the agent's own validation (defaults used). */
  readonly invalid: readonly SettingProblem[];
}

/** Inputs of {@link buildNodeAgentStatus}. */
export interface NodeAgentStatusInput {
  readonly sample: HealthSample;
  readonly settings: SettingsReport;
  readonly paused: boolean;
  /** `metadata.generation` of the spec that was applied. */
  readonly generation: number | undefined;
  readonly nodeName: string;
  readonly agentVersion: string;
  readonly now: Date;
  /** The status the API server holds now. */
  readonly previous: NodeAgentStatus | undefined;
}

interface ConditionInput {
  readonly type: NodeAgentConditionType;
  readonly status: 'True' | 'False';
  readonly reason: string;
  readonly message: string;
}

/** RFC 3339 with whole seconds, as the API server stores times. */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function fromReadiness(type: NodeAgentConditionType, readiness: Readiness, readyMessage: string): ConditionInput {
  if (readiness.ready) return { type, status: 'True', reason: type, message: readyMessage };
  return { type, status: 'False', reason: readiness.reason === '' ? `${type.replace(/Ready$/, '')}NotReady` : readiness.reason, message: readiness.message };
}

function readyCondition(parts: readonly ConditionInput[], paused: boolean): ConditionInput {
  const failing = parts.filter((c) => c.status !== 'True');
  const first = failing[0];
  if (first === undefined) {
    const message = paused ? 'runtime, queue and API are ready; paused: new pods are not started' : 'runtime, queue and API are ready';
    return { type: 'Ready', status: 'True', reason: 'AgentReady', message };
  }
  return {
    type: 'Ready',
    status: 'False',
    reason: `${first.type.replace(/Ready$/, '')}NotReady`,
    message: failing.map((c) => `${c.type}: ${c.message}`).join('; '),
  };
}

function problemList(problems: readonly SettingProblem[]): string {
  return problems.map((p) => `${p.field} ${p.message}`).join('; ');
}

/** SettingsApplied: the most serious cause names the reason; every cause is in the message. */
export function settingsCondition(report: SettingsReport, generation: number | undefined): ConditionInput {
  const messages: string[] = [];
  if (report.applyFailures.length > 0) messages.push(`could not apply: ${problemList(report.applyFailures)}`);
  if (report.invalid.length > 0) messages.push(`refused (defaults used): ${problemList(report.invalid)}`);
  const reason = report.applyFailures.length > 0 ? 'ApplyFailed' : 'InvalidSettings';
  if (messages.length > 0) return { type: 'SettingsApplied', status: 'False', reason, message: messages.join('; ') };
  const of = generation === undefined ? '' : ` of generation ${generation}`;
  return { type: 'SettingsApplied', status: 'True', reason: 'Applied', message: `every setting${of} is in effect` };
}

/** A condition keeping the held transition time while its status is unchanged. */
function withTransition(
  input: ConditionInput,
  context: { readonly now: string; readonly generation: number | undefined; readonly previous: readonly NodeAgentCondition[] },
): NodeAgentCondition {
  const before = context.previous.find((c) => c.type === input.type);
  const lastTransitionTime = before?.status === input.status ? before.lastTransitionTime : context.now;
  return { ...input, lastTransitionTime, ...(context.generation === undefined ? {} : { observedGeneration: context.generation }) };
}

function queueStatus(counts: QueueJobCounts | undefined, previous: NodeAgentQueueStatus | undefined): NodeAgentQueueStatus | undefined {
  if (counts === undefined) return previous;
  const { waiting, active, delayed, failed } = counts;
  return { waiting, active, delayed, failed, depth: waiting + active };
}

/** Builds the full status the agent writes. */
export function buildNodeAgentStatus(input: NodeAgentStatusInput): NodeAgentStatus {
  const { sample, previous, generation } = input;
  const parts = [
    fromReadiness('RuntimeReady', sample.runtime, 'the container runtime is ready and relisted recently'),
    fromReadiness('QueueReady', sample.queue, 'the reconcile queue\'s Redis answers'),
    fromReadiness('APIReady', sample.api, 'the pod watch is synced and the Node status and lease are current'),
  ];
  const conditions = [readyCondition(parts, input.paused), ...parts, settingsCondition(input.settings, generation)];
  const context = { now: rfc3339(input.now.getTime()), generation, previous: previous?.conditions ?? [] };
  const queue = queueStatus(sample.queueCounts, previous?.queue);
  const runtimeVersion = sample.runtimeVersion ?? previous?.runtimeVersion;
  return {
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    nodeName: input.nodeName,
    conditions: conditions.map((c) => withTransition(c, context)),
    pods: sample.pods,
    ...(queue === undefined ? {} : { queue }),
    ...(runtimeVersion === undefined ? {} : { runtimeVersion }),
    agentVersion: input.agentVersion,
    ...(sample.lastRelistMs === undefined ? {} : { lastRelistTime: rfc3339(sample.lastRelistMs) }),
  };
}

/**
 * What makes a new status worth writing before the next heartbeat: any condition's status, the
 * applied generation, the pod count or the queue counts changed. Messages and times alone do not.
 */
export function statusSummary(status: NodeAgentStatus): string {
  return JSON.stringify([
    status.observedGeneration,
    status.conditions?.map((c) => `${c.type}=${c.status}/${c.reason}`),
    status.pods,
    status.queue,
    status.runtimeVersion,
  ]);
}
