/**
 * Live NodeAgent settings in e2e tests: patch the node's NodeAgent spec and wait until the agent
 * reports that generation applied. Tests that change settings restore them with `null` patches.
 */
import { NODE_NAME, eventually, kubectl } from './helpers.js';

interface NodeAgentView {
  metadata: { generation: number };
  status?: { observedGeneration?: number; conditions?: { type: string; status: string; reason: string; message: string }[] };
}

/** Merge-patches the NodeAgent's spec; `null` removes a field. */
export async function patchNodeAgentSpec(spec: Record<string, unknown>): Promise<void> {
  await kubectl(['patch', 'nodeagent', NODE_NAME, '--type', 'merge', '-p', JSON.stringify({ spec })]);
}

/** Waits until the agent reports the NodeAgent's current generation applied with SettingsApplied=True. */
export async function waitNodeAgentSettingsApplied(what = 'the NodeAgent spec applied (SettingsApplied=True)'): Promise<void> {
  await eventually(what, async () => {
    const agent = JSON.parse(await kubectl(['get', 'nodeagent', NODE_NAME, '-o', 'json'])) as NodeAgentView;
    const applied = agent.status?.conditions?.find((c) => c.type === 'SettingsApplied');
    return agent.status?.observedGeneration === agent.metadata.generation && applied?.status === 'True' ? true : undefined;
  });
}
