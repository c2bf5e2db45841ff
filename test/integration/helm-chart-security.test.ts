/**
 * The chart's security settings, rendered (`helm template`) and read field by field: the agent's
 * bootstrap-only ServiceAccount and its node identity's rights, the NodeAgent admission policy, the
 * CSR approver's rights, the agent's health probes, and the internal Redis' credentials (per-node
 * users kept by redis-users, the dashboard's own user) and its NetworkPolicy. docs/security.md.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { KubernetesObject, V1ClusterRole, V1ClusterRoleBinding, V1DaemonSet, V1Deployment, V1NetworkPolicy, V1Secret, V1Service, V1StatefulSet } from '@kubernetes/client-node';
import { parseSettings } from '../../cmd/flags.js';
import { parseRedisUsersSettings } from '../../queue-users/main.js';
import { allOf, containerOf, envOf, expandArgs, oneOf, renderChart, verbsByResource } from './helm-chart-helpers.js';

describe("the nodelet chart's security settings, rendered", () => {
  let objects: KubernetesObject[] = [];
  let daemonSet: V1DaemonSet;

  before(async () => {
    objects = await renderChart();
    daemonSet = oneOf<V1DaemonSet>(objects, 'DaemonSet');
  });

  it('runs every container as a non-root user but the agent and the runtime, which are privileged as a kubelet and its runtime are', async () => {
    const renders = [objects, await renderChart({ set: ['redis.mode=sidecar', 'dashboard.enabled=true'] })];
    const seen: string[] = [];
    for (const rendered of renders) {
      for (const workload of [...allOf<V1DaemonSet>(rendered, 'DaemonSet'), ...allOf<V1Deployment>(rendered, 'Deployment'), ...allOf<V1StatefulSet>(rendered, 'StatefulSet')]) {
        const pod = workload.spec?.template.spec;
        for (const container of [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])]) {
          const id = `${workload.kind}/${workload.metadata?.name ?? ''}/${container.name}`;
          const uid = container.securityContext?.runAsUser ?? pod?.securityContext?.runAsUser;
          const nonRoot = container.securityContext?.runAsNonRoot ?? pod?.securityContext?.runAsNonRoot;
          if (workload.kind === 'DaemonSet' && ['agent', 'runtime'].includes(container.name)) {
            assert.equal(container.securityContext?.privileged, true, id);
            continue;
          }
          assert.ok(uid !== undefined && uid !== 0 && nonRoot === true, `${id} runs as uid ${String(uid)}, runAsNonRoot ${String(nonRoot)}`);
          assert.notEqual(container.securityContext?.privileged, true, id);
          assert.equal(container.securityContext?.allowPrivilegeEscalation, false, id);
          seen.push(`${id}:${uid}`);
        }
      }
    }
    console.log(`# non-root containers: ${[...new Set(seen)].sort().join(', ')}`);
    assert.ok(seen.some((c) => c.includes('/redis-server:') || c.includes('/redis:')), `a Redis container among ${seen.join(' ')}`);
  });

  it('requests the serving certificate through the CSR API when agent.rotateServerCertificates is set, with no CSR right of its own', async () => {
    const objects = await renderChart({ set: ['agent.rotateServerCertificates=true'] });
    const agent = containerOf(oneOf<V1DaemonSet>(objects, 'DaemonSet'), 'agent');
    const settings = parseSettings(expandArgs((agent.args ?? []).slice(1), { NODE_NAME: 'worker-1', NODE_IP: '192.0.2.10' }), { REDIS_URL: envOf(agent, 'REDIS_URL')?.value });
    assert.ok(settings !== 'help');
    assert.equal(settings.nodeServer.rotateServerCertificates, true);
    // The node requests it as itself: the Node authorizer's rules cover CSRs; the chart adds none.
    assert.equal(allOf<V1ClusterRole>(objects, 'ClusterRole').filter((r) => r.metadata?.name !== 'rel-nodelet-approver').some((r) => Object.keys(verbsByResource([r])).some((k) => k.startsWith('certificates.k8s.io/'))), false);
  });

  it('gives the agent\'s service account only the bootstrap, and its node identity only its own NodeAgent beyond the Node authorizer', () => {
    const subject = { kind: 'ServiceAccount', name: 'rel-nodelet', namespace: 'nodelet-system' };
    const bindings = allOf<V1ClusterRoleBinding>(objects, 'ClusterRoleBinding');
    const bootstrap = bindings.filter((b) => (b.subjects ?? []).some((s) => s.name === subject.name && s.kind === 'ServiceAccount'));
    assert.deepEqual(bootstrap.map((b) => [b.roleRef.name, b.subjects]), [['system:node-bootstrapper', [subject]]]);
    // No namespaced rights anywhere (leases come from the Node authorizer now).
    assert.equal(objects.some((o) => o.kind === 'Role' || o.kind === 'RoleBinding'), false);
    const nodeBinding = oneOf<V1ClusterRoleBinding>(objects, 'ClusterRoleBinding', 'rel-nodelet-node');
    assert.deepEqual(nodeBinding.subjects, [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:nodes' }]);
    assert.deepEqual(verbsByResource([oneOf<V1ClusterRole>(objects, 'ClusterRole', nodeBinding.roleRef.name)]), {
      'nodelet.dev/nodeagents': ['create', 'get', 'list', 'watch'],
      'nodelet.dev/nodeagents/status': ['update'],
    });
    const policy = oneOf<KubernetesObject & { spec: { matchConstraints: { resourceRules: { resources: string[]; operations: string[] }[] }; validations: { expression: string; reason: string }[] } }>(objects, 'ValidatingAdmissionPolicy');
    assert.deepEqual(policy.spec.matchConstraints.resourceRules.map((r) => [r.resources, r.operations]), [[['nodeagents', 'nodeagents/status'], ['CREATE', 'UPDATE', 'DELETE']]]);
    assert.equal(policy.spec.validations[0]?.reason, 'Forbidden');
    const policyBinding = oneOf<KubernetesObject & { spec: { policyName: string; validationActions: string[] } }>(objects, 'ValidatingAdmissionPolicyBinding');
    assert.deepEqual(policyBinding.spec, { policyName: policy.metadata?.name, validationActions: ['Deny'] });
  });

  it('mounts the service account token into the agent container only, and bootstraps the node identity from it', () => {
    const pod = daemonSet.spec?.template.spec;
    assert.equal(pod?.automountServiceAccountToken, false);
    const mounting = (pod?.containers ?? []).filter((c) => (c.volumeMounts ?? []).some((m) => m.name === 'bootstrap-token'));
    assert.deepEqual(mounting.map((c) => c.name), ['agent']);
    const token = (pod?.volumes ?? []).find((v) => v.name === 'bootstrap-token');
    assert.deepEqual(token?.projected?.sources?.[0]?.serviceAccountToken, { path: 'token', expirationSeconds: 3600 });
    const agent = containerOf(daemonSet, 'agent');
    const settings = parseSettings(expandArgs((agent.args ?? []).slice(1), { NODE_NAME: 'worker-1', NODE_IP: '192.0.2.10' }), { REDIS_URL: envOf(agent, 'REDIS_URL')?.value });
    assert.ok(settings !== 'help');
    assert.deepEqual(settings.credentials, { bootstrap: { kind: 'service-account' }, rotate: true });
    assert.equal(settings.certDir, '/var/lib/nodelet/pki');
  });

  it("probes the agent on its local health endpoint: startup long enough for the certificate's approval, liveness, readiness", () => {
    const agent = containerOf(daemonSet, 'agent');
    const settings = parseSettings(expandArgs((agent.args ?? []).slice(1), { NODE_NAME: 'worker-1', NODE_IP: '192.0.2.10' }), { REDIS_URL: envOf(agent, 'REDIS_URL')?.value });
    assert.ok(settings !== 'help');
    assert.deepEqual(settings.healthz, { address: '127.0.0.1', port: 10268 });
    const probe = (p: typeof agent.livenessProbe): unknown => p?.httpGet === undefined ? undefined : [p.httpGet.host, p.httpGet.port, p.httpGet.path];
    assert.deepEqual(probe(agent.startupProbe), ['127.0.0.1', 10268, '/healthz']);
    assert.deepEqual(probe(agent.livenessProbe), ['127.0.0.1', 10268, '/healthz']);
    assert.deepEqual(probe(agent.readinessProbe), ['127.0.0.1', 10268, '/readyz']);
    assert.ok((agent.startupProbe?.periodSeconds ?? 0) * (agent.startupProbe?.failureThreshold ?? 0) >= 15 * 60, 'the startup probe outlasts a 15-minute wait for approval');
  });

  it('runs the CSR approver with exactly the rights it uses, told which service account and suffix make an agent', () => {
    const approver = oneOf<V1Deployment>(objects, 'Deployment', 'rel-nodelet-approver');
    const container = approver.spec?.template.spec?.containers[0];
    assert.deepEqual(container?.args, ['approver', '--agent-service-account=nodelet-system:rel-nodelet', '--node-name-suffix=-nodelet', '--log-level=info']);
    assert.equal(approver.spec?.template.spec?.securityContext?.runAsNonRoot, true);
    const role = oneOf<V1ClusterRole>(objects, 'ClusterRole', 'rel-nodelet-approver');
    assert.deepEqual(verbsByResource([role]), {
      'certificates.k8s.io/certificatesigningrequests': ['get', 'list', 'watch'],
      'certificates.k8s.io/certificatesigningrequests/approval': ['update'],
      'certificates.k8s.io/signers': ['approve'],
      'core/nodes': ['get'],
    });
    assert.deepEqual(role.rules?.find((r) => r.resources?.includes('signers'))?.resourceNames, ['kubernetes.io/kube-apiserver-client-kubelet', 'kubernetes.io/kubelet-serving']);
  });

  it("runs an internal Redis without persistence from nodelet's image, behind an admin password no node holds, and points the agent at its Service", () => {
    const redis = oneOf<V1StatefulSet>(objects, 'StatefulSet', 'rel-nodelet-redis');
    const pod = redis.spec?.template.spec;
    assert.deepEqual(pod?.containers.map((c) => [c.name, c.image]), [['redis', 'nodelet:0.1.0'], ['redis-users', 'nodelet:0.1.0']]);
    assert.equal(pod?.securityContext?.runAsUser, 65534);
    const server = pod?.containers[0];
    assert.match(server?.command?.join(' ') ?? '', /--requirepass "\$REDIS_ADMIN_PASSWORD"/);
    assert.equal(envOf(server!, 'REDIS_ADMIN_PASSWORD')?.valueFrom?.secretKeyRef?.name, 'rel-nodelet-redis-auth');
    assert.deepEqual(pod?.volumes?.map((v) => v.name), ['api-token', 'data']);
    assert.equal(pod?.automountServiceAccountToken, false);
    assert.deepEqual(pod?.containers.filter((c) => (c.volumeMounts ?? []).some((m) => m.name === 'api-token')).map((c) => c.name), ['redis-users'], 'only redis-users gets an API token');
    assert.equal(redis.spec?.volumeClaimTemplates, undefined);
    assert.equal(oneOf<V1Service>(objects, 'Service', 'rel-nodelet-redis').spec?.ports?.[0]?.port, 6379);
    const auth = oneOf<V1Secret>(objects, 'Secret', 'rel-nodelet-redis-auth').data ?? {};
    for (const key of ['admin-password', 'dashboard-password']) assert.match(Buffer.from(auth[key] ?? '', 'base64').toString(), /^[A-Za-z0-9]{40}$/);
    // The agent: no password in its URL; its own user (--redis-node-user).
    const agent = containerOf(daemonSet, 'agent');
    assert.equal(envOf(agent, 'REDIS_URL')?.value, 'redis://rel-nodelet-redis.nodelet-system.svc:6379');
    const settings = parseSettings(expandArgs((agent.args ?? []).slice(1), { NODE_NAME: 'worker-1', NODE_IP: '192.0.2.10' }), { REDIS_URL: envOf(agent, 'REDIS_URL')?.value });
    assert.ok(settings !== 'help');
    assert.equal(settings.redisNodeUser, true);
  });

  it('keeps the nodes\' Redis users with redis-users, which may only read Nodes, and gives the dashboard its own user', () => {
    const pod = oneOf<V1StatefulSet>(objects, 'StatefulSet', 'rel-nodelet-redis').spec?.template.spec;
    const users = pod?.containers.find((c) => c.name === 'redis-users');
    assert.deepEqual(users?.args, ['redis-users', '--redis-url=redis://:$(REDIS_ADMIN_PASSWORD)@127.0.0.1:6379', '--log-level=info']);
    assert.equal(envOf(users, 'NODELET_DASHBOARD_REDIS_PASSWORD')?.valueFrom?.secretKeyRef?.key, 'dashboard-password');
    assert.equal(pod?.serviceAccountName, 'rel-nodelet-redis-users');
    assert.deepEqual(verbsByResource([oneOf<V1ClusterRole>(objects, 'ClusterRole', 'rel-nodelet-redis-users')]), { 'core/nodes': ['get', 'list', 'watch'] });
    const dashboard = oneOf<V1Deployment>(objects, 'Deployment', 'rel-nodelet-dashboard').spec?.template.spec?.containers[0];
    assert.equal(envOf(dashboard!, 'REDIS_URL')?.value, 'redis://nodelet-dashboard:$(REDIS_PASSWORD)@rel-nodelet-redis.nodelet-system.svc:6379');
    assert.equal(envOf(dashboard!, 'REDIS_PASSWORD')?.valueFrom?.secretKeyRef?.key, 'dashboard-password');
    assert.equal(allOf(objects, 'NetworkPolicy').length, 0, 'the policy is opt-in: it needs the nodes\' address ranges');
  });

  it("admits only the dashboard's pods and the nodes' addresses to Redis with redis.networkPolicy, and refuses it without the ranges", async () => {
    const objects = await renderChart({ set: ['redis.networkPolicy.enabled=true', 'redis.networkPolicy.nodeCIDRs={10.0.0.0/16,fd00::/64}'] });
    // client-node's model names the rule's `from` `_from`.
    const policy = oneOf<V1NetworkPolicy>(objects, 'NetworkPolicy');
    assert.equal(policy.spec?.podSelector?.matchLabels?.['app.kubernetes.io/component'], 'redis');
    assert.deepEqual(policy.spec?.ingress?.map((i) => (i.ports ?? []).map((p) => p.port)), [[6379]]);
    assert.deepEqual(policy.spec?.ingress?.[0]?._from?.map((f) => f.podSelector?.matchLabels?.['app.kubernetes.io/component'] ?? f.ipBlock?.cidr), ['dashboard', '10.0.0.0/16', 'fd00::/64']);
    await assert.rejects(renderChart({ set: ['redis.networkPolicy.enabled=true'] }), /nodeCIDRs is required/);
  });

  describe('with an external Redis and per-node users (redis.nodeUsers.adminSecret)', () => {
    const set = ['redis.mode=external', 'redis.url=rediss://queue.example:6380/2', 'redis.nodeUsers.adminSecret=queue-admin'];
    let external: KubernetesObject[] = [];
    before(async () => {
      external = await renderChart({ set });
    });

    it('runs each agent as its own Redis user, with no password of the chart in its URL', () => {
      const agent = containerOf(oneOf<V1DaemonSet>(external, 'DaemonSet'), 'agent');
      assert.equal(envOf(agent, 'REDIS_URL')?.value, 'rediss://queue.example:6380/2');
      assert.equal(envOf(agent, 'REDIS_PASSWORD'), undefined);
      const settings = parseSettings(expandArgs((agent.args ?? []).slice(1), { NODE_NAME: 'worker-1', NODE_IP: '192.0.2.10' }), { REDIS_URL: envOf(agent, 'REDIS_URL')?.value });
      assert.ok(settings !== 'help');
      assert.equal(settings.redisNodeUser, true);
    });

    it("keeps the users with a redis-users Deployment, the only holder of the admin's password, which may only read Nodes", () => {
      const deployment = oneOf<V1Deployment>(external, 'Deployment', 'rel-nodelet-redis-users');
      const pod = deployment.spec?.template.spec;
      const users = pod?.containers[0];
      assert.ok(users !== undefined);
      const env = { REDIS_ADMIN_USERNAME: envOf(users, 'REDIS_ADMIN_USERNAME')?.value ?? '', REDIS_ADMIN_PASSWORD: 'adminpw', NODELET_DASHBOARD_REDIS_PASSWORD: 'dashpw' };
      const settings = parseRedisUsersSettings(expandArgs((users.args ?? []).slice(1), env), env);
      assert.ok(settings !== 'help');
      assert.equal(settings.redisUrl, 'rediss://default:adminpw@queue.example:6380/2');
      assert.equal(settings.dashboardPassword, 'dashpw');
      assert.deepEqual(envOf(users, 'REDIS_ADMIN_PASSWORD')?.valueFrom?.secretKeyRef, { name: 'queue-admin', key: 'password' });
      assert.equal(envOf(users, 'NODELET_DASHBOARD_REDIS_PASSWORD')?.valueFrom?.secretKeyRef?.name, 'rel-nodelet-redis-auth');
      assert.equal(pod?.serviceAccountName, 'rel-nodelet-redis-users');
      assert.equal(pod?.automountServiceAccountToken, false);
      assert.equal(pod?.securityContext?.runAsNonRoot, true);
      assert.deepEqual(verbsByResource([oneOf<V1ClusterRole>(external, 'ClusterRole', 'rel-nodelet-redis-users')]), { 'core/nodes': ['get', 'list', 'watch'] });
      // Nothing else names the admin's Secret: no node's pod can be handed it.
      const holders = external.filter((o) => JSON.stringify(o).includes('"queue-admin"')).map((o) => `${o.kind}/${o.metadata?.name ?? ''}`);
      assert.deepEqual(holders, ['Deployment/rel-nodelet-redis-users']);
      const auth = oneOf<V1Secret>(external, 'Secret', 'rel-nodelet-redis-auth').data ?? {};
      assert.deepEqual(Object.keys(auth), ['dashboard-password'], 'no admin password of the chart: the operator has one');
      assert.equal(allOf(external, 'StatefulSet').length, 0);
    });

    it('gives the dashboard its own read-only user', () => {
      const dashboard = oneOf<V1Deployment>(external, 'Deployment', 'rel-nodelet-dashboard').spec?.template.spec?.containers[0];
      assert.equal(envOf(dashboard!, 'REDIS_URL')?.value, 'rediss://nodelet-dashboard:$(REDIS_PASSWORD)@queue.example:6380/2');
      assert.deepEqual(envOf(dashboard!, 'REDIS_PASSWORD')?.valueFrom?.secretKeyRef, { name: 'rel-nodelet-redis-auth', key: 'dashboard-password' });
    });

    const refused: readonly (readonly [string, readonly string[], RegExp])[] = [
      ['in sentinel mode, where a failover would lose the users', ['redis.mode=sentinel', 'redis.sentinel.sentinels={s-0:26379}', 'redis.nodeUsers.adminSecret=a'], /Redis does not replicate ACL users/],
      ['beside a shared password', [...set, 'redis.password.existingSecret=shared'], /exclude each other/],
      ['with credentials in the URL', ['redis.mode=external', 'redis.url=redis://u:p@queue:6379', 'redis.nodeUsers.adminSecret=a'], /must not contain credentials/],
      ['in internal mode, which has node users always', ['redis.nodeUsers.adminSecret=a'], /is for redis.mode external, not internal/],
    ];
    for (const [name, values, message] of refused) {
      it(`is refused ${name}`, async () => {
        await assert.rejects(renderChart({ set: values }), message);
      });
    }
  });
});
