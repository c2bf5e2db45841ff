import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FlagError, parseSettings } from './flags.js';

describe('parseSettings', () => {
  it('takes flags over the environment', () => {
    const s = parseSettings(['--node-name', 'Flag-Node', '--cri-endpoint', 'unix:///a.sock'], { NODE_NAME: 'env-node', CONTAINER_RUNTIME_ENDPOINT: 'unix:///b.sock' });
    assert.ok(s !== 'help');
    assert.equal(s.nodeName, 'flag-node');
    assert.equal(s.criEndpoint, 'unix:///a.sock');
  });

  it('falls back to the environment, then defaults', () => {
    const s = parseSettings([], { CONTAINER_RUNTIME_ENDPOINT: 'unix:///b.sock', REDIS_URL: 'redis://127.0.0.1:1' });
    assert.ok(s !== 'help');
    assert.equal(s.redisUrl, 'redis://127.0.0.1:1');
    assert.equal(s.rootDir, '/var/lib/nodelet');
    assert.equal(s.concurrency, 4);
    assert.equal(s.resyncPeriodMs, 60_000);
  });

  it('reaches Redis through sentinels only when --redis-sentinels is given, and refuses a bad sentinel', () => {
    const plain = parseSettings(['--cri-endpoint', 'x'], {});
    assert.ok(plain !== 'help');
    assert.equal(plain.redisSentinel, undefined);
    const s = parseSettings(['--cri-endpoint', 'x', '--redis-sentinel-master', 'queue'], { REDIS_SENTINELS: 's0:26379,s1:26379' });
    assert.ok(s !== 'help');
    assert.deepEqual(s.redisSentinel, { sentinels: [{ host: 's0', port: 26379 }, { host: 's1', port: 26379 }], masterName: 'queue' });
    const defaultMaster = parseSettings(['--cri-endpoint', 'x', '--redis-sentinels', 's0:26379'], {});
    assert.ok(defaultMaster !== 'help');
    assert.equal(defaultMaster.redisSentinel?.masterName, 'mymaster');
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--redis-sentinels', 's0'], {}), FlagError);
  });

  it('reaches a Redis Cluster with --redis-cluster-nodes, never with sentinels or node users (ACL users are per cluster node)', () => {
    const plain = parseSettings(['--cri-endpoint', 'x'], {});
    assert.ok(plain !== 'help');
    assert.equal(plain.redisCluster, undefined);
    const s = parseSettings(['--cri-endpoint', 'x'], { REDIS_CLUSTER_NODES: 'redis-0.redis:6379,redis-1.redis:6379' });
    assert.ok(s !== 'help');
    assert.deepEqual(s.redisCluster, { nodes: [{ host: 'redis-0.redis', port: 6379 }, { host: 'redis-1.redis', port: 6379 }] });
    assert.equal(s.redisSentinel, undefined);
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--redis-cluster-nodes', 'c:1', '--redis-sentinels', 's:2'], {}), FlagError);
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--redis-cluster-nodes', 'c:1', '--redis-node-user'], {}), /--redis-node-user is not offered on a Redis Cluster/);
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--redis-cluster-nodes', 'c'], {}), /--redis-cluster-nodes: a cluster node must be HOST:PORT/);
  });

  it("reads the node server's flags: port 10250, a self-signed certificate and no client CA by default", () => {
    const defaults = parseSettings(['--cri-endpoint', 'x'], {});
    assert.ok(defaults !== 'help');
    assert.deepEqual(defaults.nodeServer, { port: 10250, tlsCertFile: undefined, tlsPrivateKeyFile: undefined, rotateServerCertificates: false, clientCaFile: undefined, logDir: '/var/log', enableSystemLogQuery: false });
    const s = parseSettings(['--cri-endpoint', 'x', '--node-server-port', '10260', '--tls-cert-file', '/c.crt', '--tls-private-key-file', '/c.key', '--client-ca-file', '/ca.crt', '--node-log-dir', '/srv/logs'], {});
    assert.ok(s !== 'help');
    assert.deepEqual(s.nodeServer, { port: 10260, tlsCertFile: '/c.crt', tlsPrivateKeyFile: '/c.key', rotateServerCertificates: false, clientCaFile: '/ca.crt', logDir: '/srv/logs', enableSystemLogQuery: false });
    const rotating = parseSettings(['--cri-endpoint', 'x', '--rotate-server-certificates'], {});
    assert.ok(rotating !== 'help');
    assert.equal(rotating.nodeServer.rotateServerCertificates, true);
    // The kubelet's boolean syntax: `--flag`, `--flag=true`, `--flag=false`.
    for (const [argv, want] of [[['--enable-system-log-query'], true], [['--enable-system-log-query=true'], true], [['--enable-system-log-query=false'], false]] as const) {
      const parsed = parseSettings(['--cri-endpoint', 'x', ...argv], {});
      assert.ok(parsed !== 'help');
      assert.equal(parsed.nodeServer.enableSystemLogQuery, want, argv.join(' '));
    }
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--rotate-server-certificates', '--tls-cert-file', '/c.crt', '--tls-private-key-file', '/c.key'], {}), /exclude each other/);
  });

  it('refuses a bad node server port, and a certificate without its key (or the reverse)', () => {
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--node-server-port', '0'], {}), /--node-server-port must be a positive integer/);
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--node-server-port', '70000'], {}), /--node-server-port must be at most 65535/);
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--tls-cert-file', '/c.crt'], {}), /--tls-cert-file and --tls-private-key-file go together/);
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--tls-private-key-file', '/c.key'], {}), FlagError);
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--node-log-dir', 'var/log'], {}), /--node-log-dir must be an absolute path/);
  });

  it("links containers' logs in /var/log/containers by default, or in --container-log-link-dir", () => {
    const defaults = parseSettings(['--cri-endpoint', 'x'], {});
    assert.ok(defaults !== 'help');
    assert.equal(defaults.containerLogLinkDir, '/var/log/containers');
    const s = parseSettings(['--cri-endpoint', 'x', '--container-log-link-dir', '/var/log/nodelet-containers/'], {});
    assert.ok(s !== 'help');
    assert.equal(s.containerLogLinkDir, '/var/log/nodelet-containers');
  });

  it('refuses a relative --container-log-link-dir, and one that is the pod log directory or inside it', () => {
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--container-log-link-dir', 'var/log/containers'], {}), /--container-log-link-dir must be an absolute path/);
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--container-log-link-dir', '/var/log/pods'], {}), /must not be --pod-log-dir or inside it/);
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--pod-log-dir', '/srv/logs', '--container-log-link-dir', '/srv/logs/links'], {}), /must not be --pod-log-dir or inside it/);
    assert.ok(parseSettings(['--cri-endpoint', 'x', '--pod-log-dir', '/srv/logs', '--container-log-link-dir', '/srv/logs-links'], {}) !== 'help');
  });

  it('reads --manifest-url with its headers (comma lists, repeatable, in order) and check frequency', () => {
    const off = parseSettings(['--cri-endpoint', 'x'], {});
    assert.notEqual(off, 'help');
    if (off === 'help') return;
    assert.equal(off.manifestUrl, undefined);
    const on = parseSettings(['--cri-endpoint', 'x', '--manifest-url', 'http://127.0.0.1:8080/pods', '--manifest-url-header', 'a:hello,b:again', '--manifest-url-header', 'b:beautiful:x', '--http-check-frequency', '5'], {});
    assert.notEqual(on, 'help');
    if (on === 'help') return;
    assert.deepEqual(on.manifestUrl, { url: 'http://127.0.0.1:8080/pods', headers: [['a', 'hello'], ['b', 'again'], ['b', 'beautiful:x']], periodMs: 5000 });
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--manifest-url', 'http://127.0.0.1/', '--manifest-url-header', 'novalue'], {}), FlagError);
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--manifest-url', 'ftp://127.0.0.1/'], {}), FlagError);
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--http-check-frequency', '0'], {}), FlagError);
  });

  it('reads --pod-manifest-path: no static pods unless set (an empty value too)', () => {
    const off = parseSettings(['--cri-endpoint', 'x'], {});
    assert.ok(off !== 'help');
    assert.equal(off.podManifestPath, undefined);
    const empty = parseSettings(['--cri-endpoint', 'x', '--pod-manifest-path', ''], {});
    assert.ok(empty !== 'help');
    assert.equal(empty.podManifestPath, undefined);
    const on = parseSettings(['--cri-endpoint', 'x', '--pod-manifest-path', '/etc/kubernetes/manifests'], {});
    assert.ok(on !== 'help');
    assert.equal(on.podManifestPath, '/etc/kubernetes/manifests');
  });

  it('refuses to start without a CRI endpoint', () => {
    assert.throws(() => parseSettings([], {}), FlagError);
  });

  it('refuses a concurrency that is not a positive integer', () => {
    assert.throws(() => parseSettings(['--concurrency', '0', '--cri-endpoint', 'x'], {}), /--concurrency must be a positive integer/);
  });

  it('refuses an unknown log level', () => {
    assert.throws(() => parseSettings(['--log-level', 'loud', '--cri-endpoint', 'x'], {}), FlagError);
  });

  it('reads the cluster DNS settings, with the kubelet-like defaults', () => {
    const defaults = parseSettings(['--cri-endpoint', 'x'], {});
    assert.ok(defaults !== 'help');
    assert.deepEqual([defaults.clusterDns, defaults.clusterDomain, defaults.resolvConf], [[], 'cluster.local', '/etc/resolv.conf']);
    const s = parseSettings(['--cri-endpoint', 'x', '--cluster-dns', '10.215.0.10, fd00::a', '--cluster-domain', 'example.internal.', '--resolv-conf', ''], {});
    assert.ok(s !== 'help');
    assert.deepEqual([s.clusterDns, s.clusterDomain, s.resolvConf], [['10.215.0.10', 'fd00::a'], 'example.internal', '']);
  });

  it('refuses a cluster DNS that is not an IP, more than 3 of them, or a bad cluster domain', () => {
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--cluster-dns', 'dns.example'], {}), (e: unknown) => e instanceof FlagError && e.message === '--cluster-dns: "dns.example" is not an IP address');
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--cluster-dns', '1.1.1.1,1.1.1.2,1.1.1.3,1.1.1.4'], {}), /--cluster-dns: at most 3 servers, got 4/);
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--cluster-domain', 'Bad_Domain'], {}), /--cluster-domain: "Bad_Domain" is not a DNS subdomain/);
  });

  it('reads the security flags: unsafe sysctls, seccomp profile root (default <root-dir>/seccomp), seccomp default', () => {
    const defaults = parseSettings(['--cri-endpoint', 'x', '--root-dir', '/r'], {});
    assert.ok(defaults !== 'help');
    assert.deepEqual([defaults.allowedUnsafeSysctls, defaults.seccompProfileRoot, defaults.seccompDefault], [[], '/r/seccomp', false]);
    const set = parseSettings(['--cri-endpoint', 'x', '--allowed-unsafe-sysctls', 'kernel.msg*, net.core.somaxconn', '--seccomp-profile-root', '/p', '--seccomp-default'], {});
    assert.ok(set !== 'help');
    assert.deepEqual([set.allowedUnsafeSysctls, set.seccompProfileRoot, set.seccompDefault], [['kernel.msg*', 'net.core.somaxconn'], '/p', true]);
  });

  it('refuses an unsafe sysctl the kernel does not namespace, as the kubelet refuses to start', () => {
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--allowed-unsafe-sysctls', 'vm.swappiness'], {}), /--allowed-unsafe-sysctls: the sysctls "vm.swappiness" are not known to be namespaced/);
    assert.throws(() => parseSettings(['--cri-endpoint', 'x', '--allowed-unsafe-sysctls', 'Net.*'], {}), FlagError);
  });

  it('answers help', () => {
    assert.equal(parseSettings(['--help'], {}), 'help');
  });
});

describe('--image-credential-provider-config and --image-credential-provider-bin-dir', () => {
  const base = ['--cri-endpoint', 'unix:///a.sock'];
  it('configures the plugins only with both, as the kubelet requires', () => {
    const none = parseSettings(base, {});
    assert.ok(none !== 'help');
    assert.equal(none.imageCredentialProviders, undefined);
    const both = parseSettings([...base, '--image-credential-provider-config', '/etc/nodelet/credential-providers.yaml', '--image-credential-provider-bin-dir', '/opt/credential-providers'], {});
    assert.ok(both !== 'help');
    assert.deepEqual(both.imageCredentialProviders, { configPath: '/etc/nodelet/credential-providers.yaml', binDir: '/opt/credential-providers' });
    for (const one of [['--image-credential-provider-config', '/c.yaml'], ['--image-credential-provider-bin-dir', '/bin']]) {
      assert.throws(() => parseSettings([...base, ...one], {}), (e: unknown) => e instanceof FlagError && e.message.includes('must be given together'));
    }
  });
});
