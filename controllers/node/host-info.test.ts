import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { goArchitecture, parseOsRelease, readHostFacts, type HostSystem } from './host-info.js';

function enoent(file: string): Error {
  return Object.assign(new Error(`ENOENT: ${file}`), { code: 'ENOENT' });
}

function fakeSystem(files: Record<string, string>, filesystems: Record<string, { blocks: number; bsize: number }>): HostSystem {
  return {
    readFile: (file) => (file in files ? Promise.resolve(files[file]!) : Promise.reject(enoent(file))),
    statfs: (dir) => (dir in filesystems ? Promise.resolve(filesystems[dir]!) : Promise.reject(enoent(dir))),
    cpuCount: () => 8,
    totalMemoryBytes: () => 16 * 1024 ** 3,
    kernelRelease: () => '6.1.0-18-amd64',
    nodeArch: () => 'arm64',
    hostname: () => 'Worker-1',
  };
}

const OS_RELEASE = `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
# a comment
ID=debian
HOME_URL='https://www.debian.org/'
`;

describe('parseOsRelease', () => {
  it('reads quoted and bare values and skips comments', () => {
    const fields = parseOsRelease(OS_RELEASE);
    assert.equal(fields.PRETTY_NAME, 'Debian GNU/Linux 12 (bookworm)');
    assert.equal(fields.ID, 'debian');
    assert.equal(fields.HOME_URL, 'https://www.debian.org/');
    assert.equal(Object.keys(fields).length, 5);
  });

  it('unescapes backslashes inside double quotes', () => {
    assert.equal(parseOsRelease('PRETTY_NAME="My \\"Special\\" OS"').PRETTY_NAME, 'My "Special" OS');
  });
});

describe('goArchitecture', () => {
  it("maps Node's architecture names to Go's", () => {
    assert.equal(goArchitecture('x64'), 'amd64');
    assert.equal(goArchitecture('arm64'), 'arm64');
    assert.equal(goArchitecture('ia32'), '386');
    assert.equal(goArchitecture('ppc64'), 'ppc64le');
    assert.equal(goArchitecture('s390x'), 's390x');
  });
});

describe('readHostFacts', () => {
  const identity = {
    '/etc/machine-id': '3d1219c7c4c5404aaa1f6d2a48adfda4\n',
    '/proc/sys/kernel/random/boot_id': 'e9380cdd-c5c4-49ae-a2bf-52e9f3583cc3\n',
    '/etc/os-release': OS_RELEASE,
  };

  it('reads identity files, sizes the nearest existing ancestor of the root dir, and lowercases the host name', async () => {
    const system = fakeSystem(identity, { '/var/lib': { blocks: 1000, bsize: 4096 } });
    const facts = await readHostFacts({ rootDir: '/var/lib/nodelet', system });
    assert.deepEqual(facts, {
      cpuCount: 8,
      memoryBytes: 16 * 1024 ** 3,
      ephemeralStorageBytes: 4_096_000,
      machineId: '3d1219c7c4c5404aaa1f6d2a48adfda4',
      systemUuid: '3d1219c7c4c5404aaa1f6d2a48adfda4',
      bootId: 'e9380cdd-c5c4-49ae-a2bf-52e9f3583cc3',
      kernelVersion: '6.1.0-18-amd64',
      osImage: 'Debian GNU/Linux 12 (bookworm)',
      architecture: 'arm64',
      hostname: 'worker-1',
      runningInUserNamespace: false,
    });
  });

  it('tells a user namespace from the initial one by the uid_map, as the kubelet\'s RunningInUserNS', async () => {
    const inNamespace = fakeSystem({ ...identity, '/proc/self/uid_map': '         0     100000      65536\n' }, { '/var/lib': { blocks: 1, bsize: 4096 } });
    const onHost = fakeSystem({ ...identity, '/proc/self/uid_map': '         0          0 4294967295\n' }, { '/var/lib': { blocks: 1, bsize: 4096 } });
    assert.equal((await readHostFacts({ rootDir: '/var/lib', system: inNamespace })).runningInUserNamespace, true);
    assert.equal((await readHostFacts({ rootDir: '/var/lib', system: onHost })).runningInUserNamespace, false);
  });

  it('prefers the DMI product UUID as system UUID when it is readable', async () => {
    const system = fakeSystem(
      { ...identity, '/sys/class/dmi/id/product_uuid': 'EC2A1B2C-0000-1111-2222-333344445555\n' },
      { '/': { blocks: 1, bsize: 4096 } },
    );
    const facts = await readHostFacts({ rootDir: '/var/lib/nodelet', system });
    assert.equal(facts.systemUuid, 'EC2A1B2C-0000-1111-2222-333344445555');
  });

  it('falls back to "Linux" without os-release and empty ids without identity files', async () => {
    const facts = await readHostFacts({ rootDir: '/srv', system: fakeSystem({}, { '/srv': { blocks: 2, bsize: 512 } }) });
    assert.equal(facts.osImage, 'Linux');
    assert.equal(facts.machineId, '');
    assert.equal(facts.systemUuid, '');
    assert.equal(facts.bootId, '');
    assert.equal(facts.ephemeralStorageBytes, 1024);
  });

  it('fails when the filesystem cannot be measured for a reason other than a missing dir', async () => {
    const system = fakeSystem(identity, {});
    system.statfs = () => Promise.reject(Object.assign(new Error('EACCES'), { code: 'EACCES' }));
    await assert.rejects(readHostFacts({ rootDir: '/var/lib/nodelet', system }), { code: 'EACCES' });
  });

  it('reads real facts from this host', async () => {
    const facts = await readHostFacts({ rootDir: '/var/lib/nodelet-does-not-exist/sub' });
    assert.ok(facts.cpuCount >= 1);
    assert.ok(facts.memoryBytes > 0);
    assert.ok(facts.ephemeralStorageBytes > 0);
    assert.match(facts.machineId, /^[0-9a-f]{32}$/);
    assert.match(facts.bootId, /^[0-9a-f-]{36}$/);
    assert.notEqual(facts.kernelVersion, '');
    assert.equal(facts.hostname, facts.hostname.toLowerCase());
  });
});
