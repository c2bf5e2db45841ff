/**
 * The chart's internal Redis with `redis.tls`: rendered (`helm template`), then run. The release's
 * generated CA and certificate (from the rendered Secret) and the rendered redis-server arguments
 * start a redis-server of this test's own (Debian's, as the image's), TLS only; the agent's own
 * connection code (controllers/queue/redis.ts) reaches it over `rediss://` in a node process with
 * the rendered NODE_EXTRA_CA_CERTS, and fails without it (the certificate is verified); a plain-text
 * client is refused; the rendered readiness probe answers PONG. The hosts get the CA only, never
 * the key.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { X509Certificate, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import type { V1Container, V1DaemonSet, V1Deployment, V1Secret, V1StatefulSet } from '@kubernetes/client-node';
import { Redis } from 'ioredis';
import { REPO_DIR, containerOf, envOf, oneOf, renderChart } from './helm-chart-helpers.js';
import { freeLoopbackPort } from './helpers/free-port.js';

const run = promisify(execFile);
const ADMIN = randomBytes(16).toString('hex');
const SERVICE = 'rel-nodelet-redis.nodelet-system.svc';

/**
 * PINGs through a connection made as the agent's queue connection is (`connectRedis`, the queue's
 * role) in a fresh node process with `env`: PONG, or the error. Its commands give up after 3
 * reconnects (the agent's wait for Redis to come back), so a refused certificate shows as an error.
 */
async function pingAsAgent(url: string, env: Readonly<Record<string, string>>): Promise<string> {
  const script = [
    `import { QUEUE_ROLE, connectRedis } from ${JSON.stringify(path.join(REPO_DIR, 'controllers/queue/redis.ts'))};`,
    'const redis = connectRedis(process.env.TEST_REDIS_URL, { ...QUEUE_ROLE, maxRetriesPerRequest: 3 });',
    // ioredis' command error only says it gave up; the connection's last error says why.
    "let why = ''; redis.on('error', (error) => { why = error.message; });",
    'try { console.log(await redis.ping()); } catch (error) { console.log(`ERROR ${why || error.message}`); } finally { redis.disconnect(); }',
  ].join('\n');
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: REPO_DIR, timeout: 30_000, env: { PATH: process.env.PATH ?? '', TEST_REDIS_URL: url, ...env },
  });
  return stdout.trim();
}

describe('the internal Redis over TLS (redis.tls), rendered and run', { timeout: 120_000 }, () => {
  let dir = '';
  let port = 0;
  let server: ChildProcess | undefined;
  let redisContainer: V1Container;
  let agent: V1Container;
  let secret: V1Secret;
  let daemonSet: V1DaemonSet;

  before(async () => {
    const objects = await renderChart({ set: ['redis.tls=true', 'dashboard.enabled=true'] });
    secret = oneOf<V1Secret>(objects, 'Secret', 'rel-nodelet-redis-tls');
    redisContainer = oneOf<V1StatefulSet>(objects, 'StatefulSet').spec?.template.spec?.containers.find((c) => c.name === 'redis') ?? assert.fail('no redis container');
    daemonSet = oneOf<V1DaemonSet>(objects, 'DaemonSet');
    agent = containerOf(daemonSet, 'agent');
    dir = await mkdtemp(path.join(os.tmpdir(), 'redis-tls-'));
    for (const key of ['tls.crt', 'tls.key', 'ca.crt']) {
      await writeFile(path.join(dir, key), Buffer.from(secret.data?.[key] ?? '', 'base64'), { mode: 0o600 });
    }
    port = await freeLoopbackPort();
    // The rendered arguments, with the test's paths and port (the pod's are /tls, /data and 6379).
    const args = (redisContainer.args ?? []).map((a) => a.replace(/^\/tls\//, `${dir}/`).replace(/^6379$/, String(port)));
    server = spawn('redis-server', ['--bind', '127.0.0.1', '--dir', dir, '--requirepass', ADMIN, ...args], { stdio: 'ignore' });
    const probe = new Redis({ host: '127.0.0.1', port, password: ADMIN, tls: { ca: Buffer.from(secret.data?.['ca.crt'] ?? '', 'base64'), servername: 'localhost' }, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    for (let i = 0; i < 50 && (await probe.connect().then(() => false, () => true)); i++) await new Promise((r) => setTimeout(r, 100));
    probe.disconnect();
  });

  after(async () => {
    server?.kill('SIGKILL');
    if (dir !== '') await rm(dir, { recursive: true, force: true });
  });

  it("gives Redis a certificate for its Service name and loopback, signed by the release's CA", () => {
    const cert = new X509Certificate(Buffer.from(secret.data?.['tls.crt'] ?? '', 'base64'));
    const ca = new X509Certificate(Buffer.from(secret.data?.['ca.crt'] ?? '', 'base64'));
    assert.ok(cert.verify(ca.publicKey), 'signed by the CA');
    assert.equal(cert.checkHost(SERVICE), SERVICE);
    assert.equal(cert.checkIP('127.0.0.1'), '127.0.0.1');
    assert.equal(secret.type, 'kubernetes.io/tls');
  });

  it('points the agents and the dashboard at rediss:// with the CA, and mounts the CA alone on the hosts', () => {
    assert.equal(envOf(agent, 'REDIS_URL')?.value, `rediss://${SERVICE}:6379`);
    assert.equal(envOf(agent, 'NODE_EXTRA_CA_CERTS')?.value, '/etc/nodelet-redis-ca/ca.crt');
    const volume = daemonSet.spec?.template.spec?.volumes?.find((v) => v.name === 'redis-ca');
    assert.deepEqual(volume?.secret?.items, [{ key: 'ca.crt', path: 'ca.crt' }], 'only the CA reaches the hosts');
    assert.ok((agent.volumeMounts ?? []).some((m) => m.name === 'redis-ca' && m.mountPath === '/etc/nodelet-redis-ca' && m.readOnly === true));
  });

  it("serves TLS only: the agent's connection with the rendered CA works, without it the certificate is refused, and plain text gets no answer", async () => {
    const url = `rediss://:${ADMIN}@127.0.0.1:${port}`;
    assert.equal(await pingAsAgent(url, { NODE_EXTRA_CA_CERTS: path.join(dir, 'ca.crt') }), 'PONG');
    const unverified = await pingAsAgent(url, {});
    assert.match(unverified, /^ERROR .*(self.signed|unable to (get|verify)|certificate)/i, unverified);
    const plain = await pingAsAgent(`redis://:${ADMIN}@127.0.0.1:${port}`, {});
    assert.match(plain, /^ERROR /, plain);
    console.log(`# rediss:// with the CA: PONG; without: ${unverified}; plain text: ${plain}`);
  });

  it('answers the rendered readiness probe', async () => {
    const command = (redisContainer.readinessProbe?.exec?.command ?? []).map((c) => c.replaceAll('/tls/', `${dir}/`).replace('redis-cli', `redis-cli -p ${port}`));
    assert.match(command.join(' '), /--tls --cacert/);
    const [shell, ...rest] = command;
    await run(shell ?? '/bin/sh', rest, { env: { PATH: process.env.PATH ?? '', REDIS_ADMIN_PASSWORD: ADMIN }, timeout: 10_000 });
  });

  it('keeps the plain-text default without redis.tls', async () => {
    const objects = await renderChart();
    assert.equal(objects.some((o) => o.metadata?.name === 'rel-nodelet-redis-tls'), false);
    assert.equal(envOf(containerOf(oneOf<V1DaemonSet>(objects, 'DaemonSet'), 'agent'), 'REDIS_URL')?.value, `redis://${SERVICE}:6379`);
    const dashboard = oneOf<V1Deployment>(await renderChart({ set: ['redis.tls=true'] }), 'Deployment', 'rel-nodelet-dashboard').spec?.template.spec?.containers[0];
    assert.match(dashboard?.env?.find((e) => e.name === 'REDIS_URL')?.value ?? '', /^rediss:\/\/nodelet-dashboard:\$\(REDIS_PASSWORD\)@/);
  });
});
