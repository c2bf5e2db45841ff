import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { planMirrorRound, type MirrorRoundFacts } from './mirror-pod-plan.js';
import { applyStaticPodDefaults, parseManifest } from './static-pod.js';

function staticPod(image = 'busybox'): V1Pod {
  const manifest = parseManifest('/m/web.json', JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'ns' }, spec: { containers: [{ name: 'main', image }] } }));
  return applyStaticPodDefaults(manifest, { nodeName: 'n1', file: '/m/web.json', seenAt: new Date(0) });
}

const OLD = staticPod('busybox:1');
const NEW = staticPod('busybox:2');
const uidOf = (pod: V1Pod): string => pod.metadata?.uid ?? '';

function mirrorOf(pod: V1Pod, extra: Partial<NonNullable<V1Pod['metadata']>> = {}): V1Pod {
  return { metadata: { name: 'web-n1', namespace: 'ns', uid: `mirror-of-${uidOf(pod)}`, annotations: { 'kubernetes.io/config.mirror': uidOf(pod), 'kubernetes.io/config.source': 'file' }, ...extra } };
}

/** The round's steps in short: `create <static uid>`, `delete <mirror uid> (why)`. */
function plan(facts: Partial<MirrorRoundFacts> & { holder?: string }): string[] {
  const { holder, ...rest } = facts;
  const steps = planMirrorRound({ staticPods: [], mirrors: new Map(), synced: () => true, names: { holderOf: () => holder }, ...rest });
  return steps.map((s) => (s.kind === 'create' ? `create ${uidOf(s.staticPod)}` : `delete ${s.mirror.metadata?.uid ?? ''} (${s.why})`));
}

const mirrors = (...pods: V1Pod[]): Map<string, V1Pod> => new Map(pods.map((p) => [`${p.metadata?.namespace ?? ''}/${p.metadata?.name ?? ''}`, p]));

describe('planMirrorRound', () => {
  const cases: { name: string; facts: Partial<MirrorRoundFacts> & { holder?: string }; want: string[] }[] = [
    { name: 'a static pod without a mirror pod gets one', facts: { staticPods: [OLD] }, want: [`create ${uidOf(OLD)}`] },
    { name: 'a current mirror pod is left alone', facts: { staticPods: [OLD], mirrors: mirrors(mirrorOf(OLD)), holder: uidOf(OLD) }, want: [] },
    {
      name: 'an edited manifest whose new pod holds the name: the stale mirror pod is replaced',
      facts: { staticPods: [NEW], mirrors: mirrors(mirrorOf(OLD)), holder: uidOf(NEW) },
      want: [`delete mirror-of-${uidOf(OLD)} (hash differs from the static pod)`, `create ${uidOf(NEW)}`],
    },
    {
      name: 'an edited manifest whose old pod still holds the name (stopping): the mirror pod stays as it is',
      facts: { staticPods: [NEW], mirrors: mirrors(mirrorOf(OLD)), holder: uidOf(OLD) },
      want: [],
    },
    {
      name: 'a mirror pod being deleted (kubectl delete pod) is created again',
      facts: { staticPods: [OLD], mirrors: mirrors(mirrorOf(OLD, { deletionTimestamp: new Date(0) })), holder: uidOf(OLD) },
      want: [`delete mirror-of-${uidOf(OLD)} (being deleted)`, `create ${uidOf(OLD)}`],
    },
    {
      name: 'the manifest was removed and its pod still stops: the mirror pod stays',
      facts: { mirrors: mirrors(mirrorOf(OLD)), holder: uidOf(OLD) },
      want: [],
    },
    {
      name: 'the manifest was removed and its pod has terminated: the mirror pod goes',
      facts: { mirrors: mirrors(mirrorOf(OLD)) },
      want: [`delete mirror-of-${uidOf(OLD)} (no static pod)`],
    },
    {
      name: 'an orphan mirror pod waits for the source it came from to sync',
      facts: { mirrors: mirrors(mirrorOf(OLD)), synced: (source) => source !== 'file' },
      want: [],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.deepEqual(plan(c.facts), c.want);
    });
  }
});
