import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { CriUnavailableError, isCriError, isCriNotFound, isCriUnavailable } from '../../cri/errors.js';
import { normalizeImageRef } from './fake-images.js';
import { FAKE_STOP_EXIT_CODE, FakeRuntime } from './fake-runtime.js';
import type { ContainerConfig, PodSandboxConfig } from '../../cri/types.js';

function sandboxConfig(uid: string, extra: Partial<PodSandboxConfig> = {}): PodSandboxConfig {
  return {
    metadata: { name: `pod-${uid}`, uid, namespace: 'default', attempt: 0 },
    hostname: `pod-${uid}`,
    logDirectory: `/var/log/pods/default_pod-${uid}_${uid}`,
    labels: { 'io.kubernetes.pod.uid': uid, 'nodelet.dev/node': 'n1' },
    annotations: {},
    ...extra,
  };
}

function containerConfig(name: string, image = 'busybox:1.35'): ContainerConfig {
  return {
    metadata: { name, attempt: 0 },
    image: { image },
    command: ['sleep', '300'],
    args: [],
    workingDir: '',
    envs: [],
    mounts: [],
    labels: { 'io.kubernetes.container.name': name },
    annotations: {},
    logPath: `${name}/0.log`,
    stdin: false,
    stdinOnce: false,
    tty: false,
  };
}

function setup(): { cri: FakeRuntime; advance: (ms: number) => void } {
  let now = 1_700_000_000_000;
  const cri = new FakeRuntime({ now: () => now, images: ['docker.io/library/busybox:1.35'] });
  return {
    cri,
    advance: (ms) => {
      now += ms;
    },
  };
}

void describe('FakeRuntime sandboxes', () => {
  void it('gives each new sandbox a distinct ID and the next IP, and none to host-network sandboxes', async () => {
    const { cri } = setup();
    const a = await cri.runPodSandbox(sandboxConfig('a'));
    const b = await cri.runPodSandbox(sandboxConfig('b'));
    const host = await cri.runPodSandbox(
      sandboxConfig('h', { linux: { securityContext: { namespaceOptions: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } } }),
    );
    const c = await cri.runPodSandbox(sandboxConfig('c'));
    assert.notEqual(a, b);
    assert.deepEqual(
      [a, b, host, c].map((id) => cri.getSandbox(id)?.ip),
      ['10.88.0.2', '10.88.0.3', '', '10.88.0.4'],
    );
    assert.equal((await cri.podSandboxStatus(a)).state, 'SANDBOX_READY');
  });

  void it('moves to the next /24 after host .254', async () => {
    const cri = new FakeRuntime({ podSubnet: '10.1' });
    const ips: string[] = [];
    for (let i = 0; i < 255; i++) {
      ips.push(cri.getSandbox(await cri.runPodSandbox(sandboxConfig(`u${i}`)))?.ip ?? '');
    }
    assert.deepEqual(ips.slice(252), ['10.1.0.254', '10.1.1.2', '10.1.1.3']);
  });

  void it('refuses a second sandbox with the same name and attempt, like containerd', async () => {
    const { cri } = setup();
    await cri.runPodSandbox(sandboxConfig('a'));
    await assert.rejects(cri.runPodSandbox(sandboxConfig('a')), (e: unknown) => isCriError(e) && e.code === status.ALREADY_EXISTS);
    const retry = sandboxConfig('a');
    await cri.runPodSandbox({ ...retry, metadata: { ...retry.metadata, attempt: 1 } });
  });

  void it('stops running containers with the sandbox and removes them with it', async () => {
    const { cri } = setup();
    const sb = await cri.runPodSandbox(sandboxConfig('a'));
    const running = await cri.createContainer(sb, containerConfig('app'), sandboxConfig('a'));
    await cri.startContainer(running);
    const created = await cri.createContainer(sb, containerConfig('side'), sandboxConfig('a'));
    await cri.stopPodSandbox(sb);
    assert.equal(cri.getSandbox(sb)?.state, 'SANDBOX_NOTREADY');
    assert.equal(cri.getContainer(running)?.state, 'CONTAINER_EXITED');
    assert.equal(cri.getContainer(running)?.exitCode, FAKE_STOP_EXIT_CODE);
    assert.equal(cri.getContainer(created)?.state, 'CONTAINER_CREATED');
    await cri.removePodSandbox(sb);
    assert.deepEqual(await cri.listPodSandbox(), []);
    assert.deepEqual(await cri.listContainers(), []);
  });

  void it('treats stop and remove of an unknown sandbox as success, but status as not found', async () => {
    const { cri } = setup();
    await cri.stopPodSandbox('nope');
    await cri.removePodSandbox('nope');
    await assert.rejects(cri.podSandboxStatus('nope'), (e: unknown) => isCriNotFound(e));
  });

  void it('filters sandboxes by every pair of the label selector, by state and by ID', async () => {
    const { cri } = setup();
    const a = await cri.runPodSandbox(sandboxConfig('a'));
    const b = await cri.runPodSandbox(sandboxConfig('b'));
    await cri.stopPodSandbox(b);
    const ids = async (filter: Parameters<FakeRuntime['listPodSandbox']>[0]): Promise<string[]> =>
      (await cri.listPodSandbox(filter)).map((s) => s.id);
    assert.deepEqual(await ids({ labelSelector: { 'nodelet.dev/node': 'n1' } }), [a, b]);
    assert.deepEqual(await ids({ labelSelector: { 'nodelet.dev/node': 'n1', 'io.kubernetes.pod.uid': 'b' } }), [b]);
    assert.deepEqual(await ids({ labelSelector: { 'nodelet.dev/node': 'n2' } }), []);
    assert.deepEqual(await ids({ state: 'SANDBOX_READY' }), [a]);
    assert.deepEqual(await ids({ id: b }), [b]);
  });
});

void describe('FakeRuntime containers', () => {
  void it('walks a container through created, running and exited with timestamps from the clock', async () => {
    const { cri, advance } = setup();
    const sb = await cri.runPodSandbox(sandboxConfig('a'));
    const id = await cri.createContainer(sb, containerConfig('app'), sandboxConfig('a'));
    let status = await cri.containerStatus(id);
    assert.equal(status.state, 'CONTAINER_CREATED');
    assert.equal(status.createdAt, 1_700_000_000_000_000_000n);
    assert.equal(status.logPath, '/var/log/pods/default_pod-a_a/app/0.log');
    advance(1000);
    await cri.startContainer(id);
    advance(1000);
    cri.setContainerExited(id, 0);
    status = await cri.containerStatus(id);
    assert.deepEqual(
      [status.state, status.startedAt, status.finishedAt, status.exitCode, status.reason],
      ['CONTAINER_EXITED', 1_700_000_001_000_000_000n, 1_700_000_002_000_000_000n, 0, 'Completed'],
    );
    assert.equal(status.imageRef, (await cri.imageStatus({ image: 'busybox:1.35' }))?.id);
  });

  void it('records a non-zero exit as Error unless told the reason', async () => {
    const { cri } = setup();
    const sb = await cri.runPodSandbox(sandboxConfig('a'));
    const a = await cri.createContainer(sb, containerConfig('a'), sandboxConfig('a'));
    const b = await cri.createContainer(sb, containerConfig('b'), sandboxConfig('a'));
    await cri.startContainer(a);
    await cri.startContainer(b);
    cri.setContainerExited(a, 1);
    cri.setContainerExited(b, 137, 'OOMKilled');
    assert.deepEqual(
      [cri.getContainer(a)?.reason, cri.getContainer(b)?.reason],
      ['Error', 'OOMKilled'],
    );
  });

  void it('refuses to create a container in a missing or stopped sandbox, or from an absent image', async () => {
    const { cri } = setup();
    await assert.rejects(cri.createContainer('nope', containerConfig('app'), sandboxConfig('a')), (e: unknown) => isCriNotFound(e));
    const sb = await cri.runPodSandbox(sandboxConfig('a'));
    await assert.rejects(cri.createContainer(sb, containerConfig('app', 'nginx:1'), sandboxConfig('a')), (e: unknown) =>
      isCriNotFound(e),
    );
    await cri.stopPodSandbox(sb);
    await assert.rejects(
      cri.createContainer(sb, containerConfig('app'), sandboxConfig('a')),
      (e: unknown) => isCriError(e) && e.code === status.FAILED_PRECONDITION,
    );
  });

  void it('refuses to start a container twice', async () => {
    const { cri } = setup();
    const sb = await cri.runPodSandbox(sandboxConfig('a'));
    const id = await cri.createContainer(sb, containerConfig('app'), sandboxConfig('a'));
    await cri.startContainer(id);
    await assert.rejects(cri.startContainer(id), (e: unknown) => isCriError(e) && e.code === status.FAILED_PRECONDITION);
  });

  void it('stops a running container with the kill exit code and leaves an exited one alone', async () => {
    const { cri } = setup();
    const sb = await cri.runPodSandbox(sandboxConfig('a'));
    const id = await cri.createContainer(sb, containerConfig('app'), sandboxConfig('a'));
    await cri.startContainer(id);
    await cri.stopContainer(id, 30);
    assert.equal(cri.getContainer(id)?.exitCode, FAKE_STOP_EXIT_CODE);
    const finishedAt = cri.getContainer(id)?.finishedAt;
    await cri.stopContainer(id, 30);
    assert.equal(cri.getContainer(id)?.finishedAt, finishedAt);
    await cri.stopContainer('missing', 0);
    await cri.removeContainer(id);
    await cri.removeContainer(id);
    await assert.rejects(cri.containerStatus(id), (e: unknown) => isCriNotFound(e));
  });

  void it('filters containers by sandbox, state and labels', async () => {
    const { cri } = setup();
    const sa = await cri.runPodSandbox(sandboxConfig('a'));
    const sb = await cri.runPodSandbox(sandboxConfig('b'));
    const a1 = await cri.createContainer(sa, containerConfig('one'), sandboxConfig('a'));
    const a2 = await cri.createContainer(sa, containerConfig('two'), sandboxConfig('a'));
    const b1 = await cri.createContainer(sb, containerConfig('one'), sandboxConfig('b'));
    await cri.startContainer(a2);
    const ids = async (filter: Parameters<FakeRuntime['listContainers']>[0]): Promise<string[]> =>
      (await cri.listContainers(filter)).map((c) => c.id);
    assert.deepEqual(await ids({ podSandboxId: sa }), [a1, a2]);
    assert.deepEqual(await ids({ state: 'CONTAINER_RUNNING' }), [a2]);
    assert.deepEqual(await ids({ labelSelector: { 'io.kubernetes.container.name': 'one' } }), [a1, b1]);
    assert.deepEqual(await ids({ state: 'CONTAINER_CREATED', podSandboxId: sb }), [b1]);
  });

  void it('answers execSync through the exec handler, only for running containers', async () => {
    const { cri } = setup();
    const sb = await cri.runPodSandbox(sandboxConfig('a'));
    const id = await cri.createContainer(sb, containerConfig('app'), sandboxConfig('a'));
    await assert.rejects(cri.execSync(id, ['true'], 1), (e: unknown) => isCriError(e) && e.code === status.FAILED_PRECONDITION);
    await cri.startContainer(id);
    cri.execHandler = (_id, cmd) => ({ stdout: Buffer.from(cmd.join(' ')), stderr: Buffer.alloc(0), exitCode: 3 });
    const result = await cri.execSync(id, ['cat', '/ready'], 1);
    assert.deepEqual([result.stdout.toString(), result.exitCode], ['cat /ready', 3]);
  });
});

void describe('FakeRuntime calls and injected errors', () => {
  void it('records every call in order with its arguments', async () => {
    const { cri } = setup();
    const sb = await cri.runPodSandbox(sandboxConfig('a'));
    await cri.listContainers({ podSandboxId: sb });
    await cri.stopPodSandbox(sb, { timeoutMs: 5 });
    assert.deepEqual(
      cri.calls.map((c) => [c.method, c.args.length]),
      [
        ['runPodSandbox', 2],
        ['listContainers', 1],
        ['stopPodSandbox', 2],
      ],
    );
    assert.deepEqual(cri.callsTo('stopPodSandbox')[0]?.args, [sb, { timeoutMs: 5 }]);
  });

  void it('fails only the next call of the injected method, after recording it', async () => {
    const { cri } = setup();
    cri.injectError('pullImage', new CriUnavailableError({ method: 'PullImage', code: status.UNAVAILABLE, message: 'down' }));
    await assert.rejects(cri.pullImage({ image: 'nginx:1' }), (e: unknown) => isCriUnavailable(e));
    assert.equal(await cri.imageStatus({ image: 'nginx:1' }), undefined);
    const ref = await cri.pullImage({ image: 'nginx:1' });
    assert.equal((await cri.imageStatus({ image: 'docker.io/library/nginx:1' }))?.id, ref);
    assert.deepEqual(
      cri.calls.map((c) => c.method),
      ['pullImage', 'imageStatus', 'pullImage', 'imageStatus'],
    );
  });

  void it('queues several injected errors in order', async () => {
    const { cri } = setup();
    cri.injectError('version', new Error('first'));
    cri.injectError('version', new Error('second'));
    await assert.rejects(cri.version(), /first/);
    await assert.rejects(cri.version(), /second/);
    assert.equal((await cri.version()).runtimeName, 'fake');
  });
});

void describe('FakeRuntime images', () => {
  void it('normalizes image references the way containerd stores them', () => {
    assert.deepEqual(
      ['busybox', 'busybox:1.35', 'me/app', 'registry.k8s.io/pause:3.10', 'localhost/x', 'host:5000/a/b@sha256:00', 'sha256:ab'].map(
        normalizeImageRef,
      ),
      [
        'docker.io/library/busybox:latest',
        'docker.io/library/busybox:1.35',
        'docker.io/me/app:latest',
        'registry.k8s.io/pause:3.10',
        'localhost/x:latest',
        'host:5000/a/b@sha256:00',
        'sha256:ab',
      ],
    );
  });

  void it('finds an image by short name, ID or digest, and forgets it on remove', async () => {
    const { cri } = setup();
    const image = await cri.imageStatus({ image: 'busybox:1.35' });
    assert.ok(image);
    assert.equal((await cri.imageStatus({ image: image.id }))?.id, image.id);
    assert.equal((await cri.imageStatus({ image: image.repoDigests[0] ?? '' }))?.id, image.id);
    await cri.removeImage({ image: 'busybox:1.35' });
    await cri.removeImage({ image: 'busybox:1.35' });
    assert.deepEqual(await cri.listImages(), []);
  });
});
