// Unpacks Triton's perf_analyzer for the e2e tests. The current perf-analyzer wheel needs glibc
// 2.38 (Debian 12 has 2.36), so we take the binary that tritonclient 2.47.0 still shipped, built
// for glibc 2.34. Pinned by sha256; it needs libb64-0d (Debian) and libcudart.so.12 (PyPI
// nvidia-cuda-runtime-cu12) at run time.
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cache = join(root, '.cache');
const PIN = {
  spec: 'tritonclient==2.47.0',
  wheel: 'tritonclient-2.47.0-py3-none-manylinux1_x86_64.whl',
  sha256: '754ab373a45306be0c45afbcde06838179d04561694f6d15e138530153aee581',
  member: 'tritonclient-2.47.0.data/data/bin/perf_analyzer',
};

export const perfAnalyzerPath = join(cache, 'tools', 'perf_analyzer-2.47.0', 'perf_analyzer');

export function ensurePerfAnalyzer({ python = process.env.PYTHON ?? 'python3', log = console.log } = {}) {
  if (existsSync(perfAnalyzerPath)) return perfAnalyzerPath;
  const wheels = join(cache, 'wheels');
  mkdirSync(wheels, { recursive: true });
  const wheel = join(wheels, PIN.wheel);
  if (!existsSync(wheel)) {
    log(`fetch-perf-analyzer: downloading ${PIN.spec} (perf_analyzer) from PyPI`);
    const r = spawnSync(python, ['-m', 'pip', 'download', '--no-deps', '--only-binary=:all:', '-d', wheels, PIN.spec], {
      stdio: 'inherit',
    });
    if (r.status !== 0) throw new Error(`pip download ${PIN.spec} failed`);
  }
  const got = createHash('sha256').update(readFileSync(wheel)).digest('hex');
  if (got !== PIN.sha256) throw new Error(`sha256 mismatch for ${PIN.wheel}: ${got}`);
  const out = dirname(perfAnalyzerPath);
  mkdirSync(out, { recursive: true });
  const unzip = `import sys, zipfile, shutil\nz = zipfile.ZipFile(sys.argv[1])\nwith z.open(sys.argv[2]) as s, open(sys.argv[3], 'wb') as d: shutil.copyfileobj(s, d)`;
  const r = spawnSync(python, ['-c', unzip, wheel, PIN.member, perfAnalyzerPath], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error('could not unpack perf_analyzer');
  chmodSync(perfAnalyzerPath, 0o755);
  return perfAnalyzerPath;
}

/** LD_LIBRARY_PATH entry holding libcudart.so.12 from the nvidia-cuda-runtime-cu12 wheel. */
export function cudartLibDir() {
  const r = spawnSync(
    process.env.PYTHON ?? 'python3',
    ['-c', 'import nvidia.cuda_runtime as m, os; print(os.path.join(list(m.__path__)[0], "lib"))'],
    { encoding: 'utf8' },
  );
  return r.status === 0 ? r.stdout.trim() : null;
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(ensurePerfAnalyzer());
