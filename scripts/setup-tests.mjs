#!/usr/bin/env node
// Sets up what the tests drive hloserve with, inside the checkout's git-ignored .cache/test, so that
// `npm test` on a fresh clone needs nothing installed by hand. Each step is idempotent and cached
// behind a stamp keyed by what it was built from (pinned requirement files, pinned hashes), so a
// second run fetches nothing. Where a step truly needs root and we have none, it stops at once
// with the exact command to run instead of letting the tests fail one by one.
//
//   node scripts/setup-tests.mjs [step ...] [--json]
//
// Steps: python, perf-analyzer, protoc, chromium, go (the defaults `npm test` runs), and on request
// postgres, hadolint. Prints (or with --json, writes as one JSON object) the environment the tests
// run with: PYTHON, HLOSERVE_TEST_EXPORT_PYTHON, PROTOC, HLOSERVE_PERF_ANALYZER, ...
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePerfAnalyzer } from '../e2e/scripts/fetch-perf-analyzer.mjs';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** Test tooling belongs to the checkout, not to the server's state (HLOSERVE_CACHE_DIR). */
export const testCacheDir = join(repoRoot, '.cache', 'test');

export const DEFAULT_STEPS = ['python', 'perf-analyzer', 'protoc', 'chromium', 'go'];
export const OPTIONAL_STEPS = ['postgres', 'hadolint'];

/** A step that cannot go on without something only the user (or root) can do. */
export class SetupNeedsAction extends Error {}

// tritonclient caps ml_dtypes below what the exporter's jax pins, so the two live apart.
const VENVS = {
  e2e: ['e2e/requirements.txt', 'scripts/requirements-tests.txt'],
  export: ['export/requirements.txt'],
  lint: ['scripts/requirements-lint.txt'],
};

const isRoot = () => process.getuid?.() === 0;

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', ...opts });
  if (r.error) return { status: 127, stdout: '', stderr: String(r.error.message) };
  return r;
}

function must(cmd, args, what, opts = {}) {
  const r = run(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'], ...opts });
  if (r.status !== 0) throw new Error(`${what} failed (exit ${r.status}): ${cmd} ${args.join(' ')}`);
}

function sha256(...parts) {
  const h = createHash('sha256');
  for (const p of parts) h.update(p).update('\0');
  return h.digest('hex');
}

function stampPath(name) {
  return join(testCacheDir, 'stamps', `${name}.stamp`);
}
function stamped(name, key) {
  return existsSync(stampPath(name)) && readFileSync(stampPath(name), 'utf8').trim() === key;
}
function stamp(name, key) {
  mkdirSync(dirname(stampPath(name)), { recursive: true });
  writeFileSync(stampPath(name), key + '\n');
}

function which(cmd) {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir && existsSync(join(dir, cmd))) return join(dir, cmd);
  }
  return null;
}

function aptListsPresent() {
  const dir = '/var/lib/apt/lists';
  return existsSync(dir) && readdirSync(dir).some((f) => f.endsWith('_Packages') || f.endsWith('_Packages.lz4'));
}

/** Installs Debian packages when we are root; otherwise stops with the exact command. */
function aptInstall(packages, why, log) {
  const install = `apt-get install -y --no-install-recommends ${packages.join(' ')}`;
  if (!which('apt-get')) {
    throw new SetupNeedsAction(
      `${why}: install the Debian/Ubuntu package(s) ${packages.join(', ')} or their equivalent`,
    );
  }
  if (!isRoot()) {
    throw new SetupNeedsAction(
      `${why} needs root. Run:\n  sudo apt-get update && sudo ${install}\nthen run npm test again.`,
    );
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  if (!aptListsPresent()) must('apt-get', ['update', '-qq'], 'apt-get update', { env });
  log(`setup-tests: ${install}`);
  must('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...packages], `apt-get install ${packages}`, {
    env,
  });
}

function basePython() {
  return process.env.HLOSERVE_PYTHON ?? 'python3';
}

const readyVenvs = new Map();

/** A project-local venv built from pinned requirement files; rebuilt only when they change. */
export function ensureVenv(name, log = console.log) {
  if (!readyVenvs.has(name)) readyVenvs.set(name, buildVenv(name, log));
  return readyVenvs.get(name);
}

function buildVenv(name, log) {
  const dir = join(testCacheDir, `venv-${name}`);
  const python = join(dir, 'bin', 'python');
  const base = basePython();
  const version = run(base, ['-c', 'import sys; print(sys.version)']);
  if (version.status !== 0) throw new SetupNeedsAction(`the tests need Python 3 ('${base}' did not run)`);
  const files = VENVS[name];
  const key = sha256(version.stdout, ...files.map((f) => readFileSync(join(repoRoot, f))));
  if (existsSync(python) && stamped(`venv-${name}`, key)) return python;
  log(`setup-tests: building the ${name} Python environment in ${dir}`);
  rmSync(dir, { recursive: true, force: true });
  let r = run(base, ['-m', 'venv', dir]);
  if (r.status !== 0 && /ensurepip|venv/.test(r.stderr + r.stdout)) {
    // Debian splits venv/ensurepip out of python3 into python3-venv.
    rmSync(dir, { recursive: true, force: true });
    aptInstall(['python3-venv'], 'creating a Python virtual environment', log);
    r = run(base, ['-m', 'venv', dir]);
  }
  if (r.status !== 0) throw new Error(`${base} -m venv ${dir} failed:\n${r.stderr}`);
  const reqs = files.flatMap((f) => ['-r', join(repoRoot, f)]);
  must(python, ['-m', 'pip', 'install', '-q', '--disable-pip-version-check', ...reqs], `pip install (${name})`);
  stamp(`venv-${name}`, key);
  return python;
}

/** libb64.so.0d (perf_analyzer links it): the system's, else Debian's package unpacked without root. */
function ensureLibb64(log) {
  const sys = run('/sbin/ldconfig', ['-p']);
  if (sys.status === 0 && /libb64\.so\.0d\b/.test(sys.stdout)) return null;
  const dir = join(testCacheDir, 'libb64');
  const libDir = join(dir, 'usr', 'lib', 'x86_64-linux-gnu');
  if (existsSync(join(libDir, 'libb64.so.0d')) && stamped('libb64', 'libb64-0d')) return libDir;
  if (!which('apt-get') || !which('dpkg')) {
    throw new SetupNeedsAction('perf_analyzer needs libb64.so.0d: install libb64-0d (Debian/Ubuntu) or its equivalent');
  }
  if (!aptListsPresent()) {
    if (!isRoot())
      throw new SetupNeedsAction(
        'fetching libb64-0d needs the apt package lists. Run:\n  sudo apt-get update\nthen run npm test again.',
      );
    must('apt-get', ['update', '-qq'], 'apt-get update');
  }
  log('setup-tests: fetching Debian libb64-0d into .cache (apt-get download + dpkg -x, no root needed)');
  const tmp = mkdtempSync(join(testCacheDir, 'deb-'));
  try {
    // apt checks the package against the signed archive index it downloads from.
    // As root, apt would otherwise try (and warn about) dropping to its _apt user for the download.
    const sandbox = isRoot() ? ['-o', 'APT::Sandbox::User=root'] : [];
    must('apt-get', ['download', '-q', ...sandbox, 'libb64-0d'], 'apt-get download libb64-0d', { cwd: tmp });
    const deb = readdirSync(tmp).find((f) => f.endsWith('.deb'));
    if (!deb) throw new Error('apt-get download produced no .deb');
    rmSync(dir, { recursive: true, force: true });
    must('dpkg', ['-x', join(tmp, deb), dir], 'dpkg -x');
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  if (!existsSync(join(libDir, 'libb64.so.0d')))
    throw new Error(`libb64-0d did not unpack libb64.so.0d into ${libDir}`);
  stamp('libb64', 'libb64-0d');
  return libDir;
}

/** protoc from the pinned grpcio-tools wheel, behind a wrapper script so $PROTOC is one path. */
function ensureProtoc(log) {
  const python = ensureVenv('e2e', log);
  const wrapper = join(testCacheDir, 'bin', 'protoc');
  const key = sha256(python, readFileSync(join(repoRoot, 'scripts', 'requirements-tests.txt')));
  if (existsSync(wrapper) && stamped('protoc', key)) return wrapper;
  const inc = run(python, ['-c', 'import grpc_tools, os; print(os.path.join(grpc_tools.__path__[0], "_proto"))']);
  if (inc.status !== 0) throw new Error(`grpcio-tools is not importable from ${python}:\n${inc.stderr}`);
  mkdirSync(dirname(wrapper), { recursive: true });
  writeFileSync(wrapper, `#!/bin/sh\nexec '${python}' -m grpc_tools.protoc '-I${inc.stdout.trim()}' "$@"\n`);
  chmodSync(wrapper, 0o755);
  stamp('protoc', key);
  return wrapper;
}

/** The Go module that decodes the Kubernetes manifests into the real API types (deploy/kubernetes). */
// The module's root is the manifests' directory, so that `go test` sees them as its inputs and
// reruns when one changes (it does not track files outside the module).
const goModuleDir = join(repoRoot, 'deploy', 'kubernetes');
/** Its modules and build cache: the checkout's own, never the user's ~/go. */
const goCacheDir = join(repoRoot, '.cache', 'go');

/**
 * Downloads the Go modules of the manifest check (once per go.sum and Go version), so the test
 * itself only builds. Without Go on PATH the step provides nothing and that test skips.
 */
function ensureGoModules(log) {
  const go = which('go');
  if (!go) return {};
  const env = {
    GOMODCACHE: join(goCacheDir, 'mod'),
    GOCACHE: join(goCacheDir, 'build'),
    // readonly: the committed go.sum is the one used; modcacherw: `rm -rf .cache` can delete it.
    GOFLAGS: '-mod=readonly -modcacherw -buildvcs=false',
    // The machine's own Go: a go.mod asking for a newer one fails instead of fetching a toolchain.
    GOTOOLCHAIN: 'local',
  };
  const version = run(go, ['env', 'GOVERSION']);
  if (version.status !== 0) throw new Error(`'${go} env GOVERSION' failed:\n${version.stderr}`);
  const key = sha256(version.stdout, ...['go.mod', 'go.sum'].map((f) => readFileSync(join(goModuleDir, f))));
  const stampFile = join(goCacheDir, 'modules.stamp');
  const ready = existsSync(stampFile) && readFileSync(stampFile, 'utf8').trim() === key;
  if (!ready) {
    log(`setup-tests: downloading the Go modules of deploy/kubernetes into ${goCacheDir}`);
    // `go list -deps -test` fetches exactly the modules whose packages the check builds.
    must(go, ['list', '-deps', '-test', './...'], 'downloading the Go modules', {
      cwd: goModuleDir,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    mkdirSync(goCacheDir, { recursive: true });
    writeFileSync(stampFile, key + '\n');
  }
  return {
    HLOSERVE_TEST_GO: go,
    ...Object.fromEntries(Object.entries(env).map(([k, v]) => [`HLOSERVE_TEST_${k}`, v])),
  };
}

function postgresVersionDirs() {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return [];
  return readdirSync(base)
    .filter((v) => existsSync(join(base, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a))
    .map((v) => join(base, v, 'bin'));
}

/** The directory holding the system's PostgreSQL server binaries (initdb, postgres, pg_ctl), or null. */
export function findPostgres() {
  const [newest] = postgresVersionDirs();
  if (newest) return newest;
  const initdb = which('initdb');
  return initdb && existsSync(join(dirname(initdb), 'postgres')) ? dirname(initdb) : null;
}

/** The system's Chromium executable (Debian's chromium package), or null. */
export function findChromium() {
  if (process.env.HLOSERVE_TEST_CHROMIUM && existsSync(process.env.HLOSERVE_TEST_CHROMIUM))
    return process.env.HLOSERVE_TEST_CHROMIUM;
  return which('chromium') ?? which('chromium-browser');
}

const STEPS = {
  python(log) {
    return { PYTHON: ensureVenv('e2e', log), HLOSERVE_TEST_EXPORT_PYTHON: ensureVenv('export', log) };
  },
  'perf-analyzer'(log) {
    const python = ensureVenv('e2e', log);
    const bin = ensurePerfAnalyzer({ python, log });
    const cudart = run(python, [
      '-c',
      'import nvidia.cuda_runtime as m, os; print(os.path.join(list(m.__path__)[0], "lib"))',
    ]);
    if (cudart.status !== 0) throw new Error(`libcudart (nvidia-cuda-runtime-cu12) missing from ${python}`);
    const libs = [ensureLibb64(log), cudart.stdout.trim()].filter(Boolean);
    return { HLOSERVE_PERF_ANALYZER: bin, HLOSERVE_PERF_ANALYZER_LD_PATH: libs.join(':') };
  },
  protoc(log) {
    return { PROTOC: ensureProtoc(log) };
  },
  go(log) {
    // Inside CI's fresh-clone replay the outer run has just decoded the same commit's manifests; a
    // second cold module download (1.6 GB) and build (about 5 CPU-minutes) would prove nothing new.
    // Silent, like every cached step: a set-up run that prints nothing fetched nothing.
    if (process.env.HLOSERVE_FRESH_CLONE === '1') return {};
    return ensureGoModules(log);
  },
  postgres(log) {
    let bin = findPostgres();
    if (!bin) {
      aptInstall(['postgresql'], 'the PostgreSQL tests need a PostgreSQL server', log);
      bin = findPostgres();
    }
    if (!bin) throw new Error('postgresql installed but no initdb found under /usr/lib/postgresql/*/bin');
    return { HLOSERVE_TEST_PG_BIN: bin };
  },
  chromium(log) {
    let exe = findChromium();
    if (!exe) {
      aptInstall(['chromium'], 'the console tests need Chromium', log);
      exe = findChromium();
    }
    if (!exe) throw new Error('chromium installed but not found on PATH');
    return { HLOSERVE_TEST_CHROMIUM: exe };
  },
  hadolint(log) {
    const python = ensureVenv('lint', log);
    return { HLOSERVE_HADOLINT: join(dirname(python), 'hadolint') };
  },
};

/**
 * Runs the named steps (default: what `npm test` needs) and returns the environment variables the
 * tests use to find what they set up. Throws SetupNeedsAction when the user must act first.
 */
export function setupTests(steps = DEFAULT_STEPS, log = console.log) {
  const env = {};
  for (const s of steps) {
    const step = STEPS[s];
    if (!step) throw new Error(`unknown setup step '${s}' (known: ${Object.keys(STEPS).join(', ')})`);
    Object.assign(env, step(log));
  }
  return env;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const json = process.argv.includes('--json');
  const steps = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const log = json ? (m) => console.error(m) : console.log;
  try {
    const env = setupTests(steps.length ? steps : DEFAULT_STEPS, log);
    if (json) console.log(JSON.stringify(env));
    else for (const [k, v] of Object.entries(env)) console.log(`${k}=${v}`);
  } catch (err) {
    console.error(`setup-tests: ${err.message}`);
    process.exit(err instanceof SetupNeedsAction ? 2 : 1);
  }
}
