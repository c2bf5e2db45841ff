/**
 * One batch of the hostile-spec run against the real API server: create the specs (counting the
 * API's refusals by category), wait until every accepted pod has a kubelet-compatible outcome,
 * then delete the batch and wait until the agent has finished every pod.
 */
import type { CoreV1Api, CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { classifyPod, type Outcome } from './outcome.js';
import { refusalCategory } from './refusal.js';
import type { HostileSpec } from './types.js';

/** An accepted spec and the pod the API made of it. */
export interface Accepted {
  readonly spec: HostileSpec;
  readonly name: string;
  readonly uid: string;
}

/** What the API did with a batch's creates. */
export interface Created {
  readonly accepted: Accepted[];
  /** One refusal category per refused spec, with the spec. */
  readonly refused: { readonly spec: HostileSpec; readonly category: string }[];
}

const CREATE_CONCURRENCY = 6;

async function createOne(core: CoreV1Api, namespace: string, spec: HostileSpec): Promise<Accepted | { spec: HostileSpec; category: string }> {
  try {
    const pod = await core.createNamespacedPod({ namespace, body: spec.pod as unknown as V1Pod });
    return { spec, name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '' };
  } catch (err: unknown) {
    const category = refusalCategory(err);
    // Not an answer of the API server (a network failure, a client bug): the run cannot go on.
    if (category === undefined) throw err;
    return { spec, category };
  }
}

/** Creates every spec of the batch in `namespace`, a few at a time. */
export async function createBatch(core: CoreV1Api, namespace: string, specs: readonly HostileSpec[]): Promise<Created> {
  const created: Created = { accepted: [], refused: [] };
  for (let i = 0; i < specs.length; i += CREATE_CONCURRENCY) {
    const results = await Promise.all(specs.slice(i, i + CREATE_CONCURRENCY).map((s) => createOne(core, namespace, s)));
    for (const r of results) {
      if ('uid' in r) created.accepted.push(r);
      else created.refused.push(r);
    }
  }
  return created;
}

/** The outcome of each accepted pod by UID; a pod the API no longer has is not settled. */
export async function outcomes(core: CoreV1Api, namespace: string, accepted: readonly Accepted[]): Promise<Map<string, Outcome>> {
  const [pods, events] = await Promise.all([core.listNamespacedPod({ namespace }), core.listNamespacedEvent({ namespace })]);
  const byUid = new Map<string, CoreV1Event[]>();
  for (const e of events.items) {
    const uid = e.involvedObject.uid ?? '';
    byUid.set(uid, [...(byUid.get(uid) ?? []), e]);
  }
  const podsByUid = new Map(pods.items.map((p) => [p.metadata?.uid ?? '', p]));
  return new Map(
    accepted.map((a) => {
      const pod = podsByUid.get(a.uid);
      const outcome: Outcome = pod === undefined ? { settled: false, reason: 'gone from the API before it settled' } : classifyPod(pod, byUid.get(a.uid) ?? []);
      return [a.uid, outcome];
    }),
  );
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls until every accepted pod is settled or `timeoutMs` passed; returns the last outcomes (the
 * unsettled ones say what is missing). `alive` is checked each round: a dead agent ends the wait.
 */
export async function settle(options: {
  readonly core: CoreV1Api;
  readonly namespace: string;
  readonly accepted: readonly Accepted[];
  readonly timeoutMs: number;
  readonly alive: () => Promise<boolean>;
}): Promise<Map<string, Outcome>> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const last = await outcomes(options.core, options.namespace, options.accepted);
    const pending = [...last.values()].filter((o) => !o.settled).length;
    if (pending === 0 || Date.now() > deadline || !(await options.alive())) return last;
    await sleep(3000);
  }
}

/**
 * Deletes every pod of the namespace (grace 1 s, whatever the spec says) and waits until the API
 * has none left: the agent must finish each one (kill, clean up, delete the object). Returns the
 * names of pods still there after `timeoutMs`.
 */
export async function deleteBatch(core: CoreV1Api, namespace: string, timeoutMs: number): Promise<string[]> {
  await core.deleteCollectionNamespacedPod({ namespace, gracePeriodSeconds: 1 });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = (await core.listNamespacedPod({ namespace })).items.map((p) => p.metadata?.name ?? '?');
    if (left.length === 0 || Date.now() > deadline) return left;
    await sleep(2000);
  }
}
