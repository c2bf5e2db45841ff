/**
 * The chart's Redis topologies (`redis.mode`, docs/redis.md): the default (internal: one shared
 * StatefulSet), sidecar (a redis-server per node in the nodelet pod, on loopback; no central
 * dashboard), sentinel (ioredis asks sentinels for the master) and cluster (a Redis Cluster, the
 * chart's own or an existing one; the chart's hook script is run against real redis-servers). Rendered with `helm template`;
 * the agent's and dashboard's rendered arguments and environment go through their own flag
 * parsers, so what the chart says is what the processes would use.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import type { KubernetesObject, V1Container, V1DaemonSet, V1Deployment, V1Job, V1Secret, V1Service, V1StatefulSet } from '@kubernetes/client-node';
import { parseSettings, type AgentSettings } from '../../cmd/flags.js';
import { parseDashboardSettings } from '../../dashboard/settings.js';
import { CHART_DIR, allOf, containerOf, envOf, expandArgs, helm, oneOf, renderChart, valueArgs } from './helm-chart-helpers.js';
import { startRedisCluster } from './helpers/redis-cluster.js';

const SCHEMA_ERROR = "values don't meet the specifications of the schema";

/** The container's literal environment values (secret references left out). */
function literalEnv(container: V1Container, extra: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...extra };
  for (const e of container.env ?? []) if (e.value !== undefined) env[e.name] = expandArgs([e.value], extra)[0];
  return env;
}

function agentSettings(objects: readonly KubernetesObject[], extraEnv: Readonly<Record<string, string>> = {}): AgentSettings {
  const agent = containerOf(oneOf<V1DaemonSet>(objects, 'DaemonSet'), 'agent');
  const args = expandArgs((agent.args ?? []).slice(1), { NODE_NAME: 'worker-1', NODE_IP: '192.0.2.10' });
  const settings = parseSettings(args, literalEnv(agent, extraEnv));
  assert.ok(settings !== 'help');
  return settings;
}

function redisObjects(objects: readonly KubernetesObject[]): string[] {
  return [...allOf(objects, 'StatefulSet'), ...allOf<V1Service>(objects, 'Service')].map((o) => `${o.kind}/${o.metadata?.name ?? ''}`).filter((n) => n.endsWith('-redis'));
}

describe('the chart with the default Redis (internal, shared by every node)', () => {
  it('runs one Redis StatefulSet and Service, points agent and dashboard at it, and adds no sidecar', async () => {
    const objects = await renderChart();
    assert.deepEqual(redisObjects(objects).sort(), ['Service/rel-nodelet-redis', 'StatefulSet/rel-nodelet-redis']);
    const daemonSet = oneOf<V1DaemonSet>(objects, 'DaemonSet');
    assert.deepEqual(daemonSet.spec?.template.spec?.containers.map((c) => c.name), ['agent', 'runtime']);
    const settings = agentSettings(objects);
    assert.equal(settings.redisUrl, 'redis://rel-nodelet-redis.nodelet-system.svc:6379');
    assert.equal(settings.redisNodeUser, true, 'as its own Redis user');
    assert.equal(settings.redisSentinel, undefined);
    assert.deepEqual(allOf<V1Deployment>(objects, 'Deployment').map((d) => d.metadata?.name).sort(), ['rel-nodelet-approver', 'rel-nodelet-dashboard'], 'the dashboard runs');
    const redisArgs = oneOf<V1StatefulSet>(objects, 'StatefulSet', 'rel-nodelet-redis').spec?.template.spec?.containers.find((c) => c.name === 'redis')?.args ?? [];
    assert.equal(redisArgs[redisArgs.indexOf('--maxclients') + 1], '20000', "room for 5,000 agents' 2 connections each, past Redis' default 10,000");
  });
});

describe('the chart with redis.mode sidecar', () => {
  it("runs each node's own redis-server from the nodelet image on loopback, and no shared Redis", async () => {
    const objects = await renderChart({ set: ['redis.mode=sidecar'] });
    assert.deepEqual(redisObjects(objects), []);
    const daemonSet = oneOf<V1DaemonSet>(objects, 'DaemonSet');
    const agent = containerOf(daemonSet, 'agent');
    const redis = containerOf(daemonSet, 'redis');
    assert.equal(redis.image, agent.image, 'the nodelet image carries redis-server');
    assert.deepEqual(redis.command, ['redis-server', '--bind', '127.0.0.1', '--port', '6391', '--protected-mode', 'yes', '--save', '', '--appendonly', 'no', '--dir', '/data', '--maxmemory-policy', 'noeviction']);
    assert.deepEqual(redis.readinessProbe?.exec?.command, ['redis-cli', '-h', '127.0.0.1', '-p', '6391', 'ping']);
    assert.equal(redis.securityContext?.readOnlyRootFilesystem, true);
    assert.equal(redis.securityContext?.runAsNonRoot, true);
    assert.equal(redis.securityContext?.privileged, undefined);
    assert.deepEqual(redis.resources?.limits, { memory: '64Mi' });
    assert.deepEqual(redis.volumeMounts, [{ name: 'redis-data', mountPath: '/data' }]);
    assert.deepEqual(daemonSet.spec?.template.spec?.volumes?.find((v) => v.name === 'redis-data')?.emptyDir, {});
    assert.equal(daemonSet.spec?.template.spec?.hostNetwork, true, 'loopback is the host network: agent and Redis share it');
    assert.equal(agentSettings(objects).redisUrl, 'redis://127.0.0.1:6391');
  });

  it('moves Redis to redis.sidecar.port, for agent and probe alike', async () => {
    const objects = await renderChart({ set: ['redis.mode=sidecar', 'redis.sidecar.port=7001'] });
    const redis = containerOf(oneOf<V1DaemonSet>(objects, 'DaemonSet'), 'redis');
    assert.equal(redis.command?.[redis.command.indexOf('--port') + 1], '7001');
    assert.ok(redis.readinessProbe?.exec?.command?.includes('7001'));
    assert.equal(agentSettings(objects).redisUrl, 'redis://127.0.0.1:7001');
  });

  it("renders no central dashboard: it could see no node's queue (NOTES say how to see one node's)", async () => {
    const objects = await renderChart({ set: ['redis.mode=sidecar', 'dashboard.enabled=true'] });
    assert.deepEqual(allOf(objects, 'Deployment').map((d) => d.metadata?.name), ['rel-nodelet-approver'], 'no dashboard');
    assert.ok(!allOf<V1Service>(objects, 'Service').some((s) => s.metadata?.name === 'rel-nodelet-dashboard'));
  });

  it('passes helm lint --strict', async () => {
    const result = await helm(['lint', '--strict', CHART_DIR, ...valueArgs({ set: ['redis.mode=sidecar'] })]);
    assert.equal(result.code, 0, result.stdout + result.stderr);
  });
});

describe('the chart with redis.mode sentinel', () => {
  const set = ['redis.mode=sentinel', 'redis.sentinel.sentinels={sentinel-0.queue:26379,[fd00::7]:26380}', 'redis.sentinel.masterName=queue'];

  it('hands agent and dashboard the sentinels and master name, which their flag parsers turn into Sentinel settings', async () => {
    const objects = await renderChart({ set });
    assert.deepEqual(redisObjects(objects), []);
    const want = { sentinels: [{ host: 'sentinel-0.queue', port: 26379 }, { host: 'fd00::7', port: 26380 }], masterName: 'queue' };
    assert.deepEqual(agentSettings(objects).redisSentinel, want);
    const dashboard = oneOf<V1Deployment>(objects, 'Deployment', 'rel-nodelet-dashboard').spec!.template.spec!.containers[0]!;
    const env = literalEnv(dashboard, { NODELET_DASHBOARD_TOKEN: 't' });
    const settings = parseDashboardSettings({ argv: expandArgs((dashboard.args ?? []).slice(1), { REDIS_URL: env.REDIS_URL ?? '' }), env, readFile: () => '' });
    assert.ok(settings !== 'help');
    assert.deepEqual(settings.redisSentinel, want);
  });

  it('takes the password from redis.password.existingSecret, defined before the URL that embeds it', async () => {
    const objects = await renderChart({ set: [...set, 'redis.password.existingSecret=queue-auth'] });
    const agent = containerOf(oneOf<V1DaemonSet>(objects, 'DaemonSet'), 'agent');
    assert.deepEqual(envOf(agent, 'REDIS_PASSWORD')?.valueFrom?.secretKeyRef, { name: 'queue-auth', key: 'password' });
    const names = (agent.env ?? []).map((e) => e.name);
    assert.ok(names.indexOf('REDIS_PASSWORD') < names.indexOf('REDIS_URL'));
    assert.equal(agentSettings(objects, { REDIS_PASSWORD: 'pw' }).redisUrl, 'redis://:pw@sentinel-master');
  });

  it('passes helm lint --strict', async () => {
    const result = await helm(['lint', '--strict', CHART_DIR, ...valueArgs({ set })]);
    assert.equal(result.code, 0, result.stdout + result.stderr);
  });

  const invalid: readonly { readonly name: string; readonly set: readonly string[]; readonly path: string }[] = [
    { name: 'sentinel mode without sentinels', set: ['redis.mode=sentinel'], path: '/redis' },
    { name: 'a sentinel without a port', set: ['redis.mode=sentinel', 'redis.sentinel.sentinels={sentinel-0}'], path: '/redis/sentinel/sentinels/0' },
    { name: 'an empty master name', set: [...set, 'redis.sentinel.masterName='], path: '/redis/sentinel/masterName' },
    { name: 'a sidecar port of 0', set: ['redis.mode=sidecar', 'redis.sidecar.port=0'], path: '/redis/sidecar/port' },
  ];
  for (const { name, set: values, path } of invalid) {
    it(`refuses ${name} at helm template`, async () => {
      const result = await helm(['template', 'rel', CHART_DIR, ...valueArgs({ set: values })]);
      assert.notEqual(result.code, 0, `helm template accepted ${values.join(' ')}`);
      assert.ok(result.stderr.includes(SCHEMA_ERROR), result.stderr);
      assert.ok(result.stderr.includes(`'${path}'`), `the error does not name ${path}: ${result.stderr}`);
    });
  }
});

describe('the chart with redis.mode cluster', () => {
  const podNames = (n: number): { host: string; port: number }[] => Array.from({ length: n }, (_, i) => ({ host: `rel-nodelet-redis-${i}.rel-nodelet-redis.nodelet-system.svc`, port: 6379 }));

  it("runs a Redis Cluster of its own: a StatefulSet of cluster-enabled redis-servers from the nodelet image, announcing their pod IPs, behind a headless Service", async () => {
    const objects = await renderChart({ set: ['redis.mode=cluster'] });
    assert.deepEqual(redisObjects(objects).sort(), ['Service/rel-nodelet-redis', 'StatefulSet/rel-nodelet-redis']);
    const set = oneOf<V1StatefulSet>(objects, 'StatefulSet', 'rel-nodelet-redis');
    assert.equal(set.spec?.replicas, 3, '3 primaries, no replicas');
    assert.equal(set.spec?.podManagementPolicy, 'Parallel');
    const pod = set.spec.template.spec!;
    assert.deepEqual(pod.containers.map((c) => c.name), ['redis'], 'no redis-users: no node users on a cluster');
    const redis = pod.containers[0]!;
    assert.equal(redis.image, containerOf(oneOf<V1DaemonSet>(objects, 'DaemonSet'), 'agent').image, "Debian's redis-server from the nodelet image");
    const args = redis.args ?? [];
    const arg = (flag: string): string | undefined => args[args.indexOf(flag) + 1];
    assert.equal(arg('--cluster-enabled'), 'yes');
    assert.equal(arg('--cluster-require-full-coverage'), 'no');
    assert.equal(arg('--maxmemory-policy'), 'noeviction');
    assert.equal(arg('--maxclients'), '20000', "room for 2 connections per agent past Redis' default 10,000");
    assert.ok(redis.command?.[2]?.includes('--cluster-announce-ip "$POD_IP"'), 'announces the pod IP');
    assert.ok(redis.command?.[2]?.includes('--requirepass "$REDIS_PASSWORD"') && redis.command[2].includes('--masterauth "$REDIS_PASSWORD"'));
    assert.deepEqual(envOf(redis, 'POD_IP')?.valueFrom?.fieldRef, { fieldPath: 'status.podIP' });
    assert.deepEqual(envOf(redis, 'REDIS_PASSWORD')?.valueFrom?.secretKeyRef, { name: 'rel-nodelet-redis-auth', key: 'password' });
    assert.deepEqual(redis.ports?.map((p) => p.containerPort), [6379, 16379]);
    assert.equal(pod.securityContext?.runAsNonRoot, true);
    const service = oneOf<V1Service>(objects, 'Service', 'rel-nodelet-redis');
    assert.equal(service.spec?.clusterIP, 'None');
    assert.equal(service.spec?.publishNotReadyAddresses, true);
    const secret = oneOf<V1Secret>(objects, 'Secret', 'rel-nodelet-redis-auth');
    assert.match(Buffer.from(secret.data?.password ?? '', 'base64').toString(), /^[A-Za-z0-9]{40}$/, 'a generated password');
  });

  it('hands agents and dashboard every cluster node and the shared password, which their flag parsers turn into cluster settings', async () => {
    const objects = await renderChart({ set: ['redis.mode=cluster'] });
    const settings = agentSettings(objects, { REDIS_PASSWORD: 'pw' });
    assert.deepEqual(settings.redisCluster, { nodes: podNames(3) });
    assert.equal(settings.redisNodeUser, false, 'no node users on a cluster');
    assert.equal(settings.redisUrl, 'redis://:pw@redis-cluster');
    const agent = containerOf(oneOf<V1DaemonSet>(objects, 'DaemonSet'), 'agent');
    assert.deepEqual(envOf(agent, 'REDIS_PASSWORD')?.valueFrom?.secretKeyRef, { name: 'rel-nodelet-redis-auth', key: 'password' });
    const dashboard = oneOf<V1Deployment>(objects, 'Deployment', 'rel-nodelet-dashboard').spec!.template.spec!.containers[0]!;
    const env = literalEnv(dashboard, { NODELET_DASHBOARD_TOKEN: 't', REDIS_PASSWORD: 'pw' });
    const dash = parseDashboardSettings({ argv: expandArgs((dashboard.args ?? []).slice(1), { REDIS_URL: env.REDIS_URL ?? '' }), env, readFile: () => '' });
    assert.ok(dash !== 'help');
    assert.deepEqual(dash.redisCluster, { nodes: podNames(3) });
    assert.equal(dash.redisUrl, 'redis://:pw@redis-cluster');
  });

  it('forms the cluster in a post-install/post-upgrade hook Job, with replicas per shard when asked', async () => {
    const objects = await renderChart({ set: ['redis.mode=cluster', 'redis.cluster.shards=4', 'redis.cluster.replicasPerShard=1'] });
    assert.equal(oneOf<V1StatefulSet>(objects, 'StatefulSet', 'rel-nodelet-redis').spec?.replicas, 8);
    const job = oneOf<V1Job>(objects, 'Job', 'rel-nodelet-redis-create');
    assert.equal(job.metadata?.annotations?.['helm.sh/hook'], 'post-install,post-upgrade');
    const create = job.spec!.template.spec!.containers[0]!;
    assert.equal(envOf(create, 'REPLICAS')?.value, '1');
    assert.equal(envOf(create, 'CLUSTER_NODES')?.value, podNames(8).map((n) => `${n.host}:${n.port}`).join(' '));
    assert.deepEqual(envOf(create, 'REDISCLI_AUTH')?.valueFrom?.secretKeyRef, { name: 'rel-nodelet-redis-auth', key: 'password' });
    assert.deepEqual(agentSettings(objects).redisCluster, { nodes: podNames(8) });
  });

  it('points at an existing cluster with redis.cluster.nodes: no Redis of its own, its password and TLS as external mode takes them', async () => {
    const objects = await renderChart({ set: ['redis.mode=cluster', 'redis.cluster.nodes={queue-0.queue:6379,[fd00::7]:7000}', 'redis.password.existingSecret=queue-auth', 'redis.tls=true'] });
    assert.deepEqual(redisObjects(objects), []);
    assert.equal(allOf(objects, 'Job').length, 0);
    const settings = agentSettings(objects, { REDIS_PASSWORD: 'pw' });
    assert.deepEqual(settings.redisCluster, { nodes: [{ host: 'queue-0.queue', port: 6379 }, { host: 'fd00::7', port: 7000 }] });
    assert.equal(settings.redisUrl, 'rediss://:pw@redis-cluster');
    assert.deepEqual(envOf(containerOf(oneOf<V1DaemonSet>(objects, 'DaemonSet'), 'agent'), 'REDIS_PASSWORD')?.valueFrom?.secretKeyRef, { name: 'queue-auth', key: 'password' });
  });

  for (const set of [['redis.mode=cluster'], ['redis.mode=cluster', 'redis.cluster.nodes={queue-0.queue:6379}']]) {
    it(`passes helm lint --strict (${set.join(' ')})`, async () => {
      const result = await helm(['lint', '--strict', CHART_DIR, ...valueArgs({ set })]);
      assert.equal(result.code, 0, result.stdout + result.stderr);
    });
  }

  const refused: readonly { readonly name: string; readonly set: readonly string[]; readonly error: string }[] = [
    { name: 'fewer than 3 shards', set: ['redis.mode=cluster', 'redis.cluster.shards=2'], error: "'/redis/cluster/shards'" },
    { name: 'a cluster node without a port', set: ['redis.mode=cluster', 'redis.cluster.nodes={queue-0}'], error: "'/redis/cluster/nodes/0'" },
    { name: "TLS on the chart's own cluster", set: ['redis.mode=cluster', 'redis.tls=true'], error: 'redis.tls is not offered' },
    { name: 'node users on a cluster', set: ['redis.mode=cluster', 'redis.cluster.nodes={q:6379}', 'redis.nodeUsers.adminSecret=admin'], error: 'cannot work in cluster mode' },
  ];
  for (const { name, set, error } of refused) {
    it(`refuses ${name} at helm template`, async () => {
      const result = await helm(['template', 'rel', CHART_DIR, ...valueArgs({ set })]);
      assert.notEqual(result.code, 0, `helm template accepted ${set.join(' ')}`);
      assert.ok(result.stderr.includes(error), result.stderr);
    });
  }

  it("the hook's script forms unjoined redis-servers into a cluster, and leaves a formed cluster as it is", async () => {
    const job = oneOf<V1Job>(await renderChart({ set: ['redis.mode=cluster'] }), 'Job', 'rel-nodelet-redis-create');
    const script = job.spec!.template.spec!.containers[0]!.command![2]!;
    const password = 'hook-test-password';
    const cluster = await startRedisCluster({ password, form: false });
    try {
      const env = { ...process.env, REDISCLI_AUTH: password, REPLICAS: '0', ATTEMPTS: '5', CLUSTER_NODES: cluster.startupNodes.map((n) => `${n.host}:${n.port}`).join(' ') };
      const first = spawnSync('/bin/sh', ['-c', script], { env, encoding: 'utf8', timeout: 60_000 });
      assert.equal(first.status, 0, first.stderr + first.stdout);
      await cluster.ready();
      const again = spawnSync('/bin/sh', ['-c', script], { env, encoding: 'utf8', timeout: 60_000 });
      assert.equal(again.status, 0, again.stderr + again.stdout);
      assert.match(again.stdout, /the Redis Cluster is formed already/);
      const owner = await cluster.primaryOf('{nodelet:n}:x');
      assert.equal(await owner.admin.set('{nodelet:n}:x', '1'), 'OK', 'the slot owner serves the key');
    } finally {
      await cluster.stop();
    }
  });
});
