/**
 * The chart's Redis topologies (`redis.mode`, docs/redis.md): the default (internal: one shared
 * StatefulSet), sidecar (a redis-server per node in the nodelet pod, on loopback; no central
 * dashboard) and sentinel (ioredis asks sentinels for the master). Rendered with `helm template`;
 * the agent's and dashboard's rendered arguments and environment go through their own flag
 * parsers, so what the chart says is what the processes would use.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject, V1Container, V1DaemonSet, V1Deployment, V1Service } from '@kubernetes/client-node';
import { parseSettings, type AgentSettings } from '../../cmd/flags.js';
import { parseDashboardSettings } from '../../dashboard/settings.js';
import { CHART_DIR, allOf, containerOf, envOf, expandArgs, helm, oneOf, renderChart, valueArgs } from './helm-chart-helpers.js';

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
