// bench/upload-archive-stall: the archive step of completing an upload (engine/src/control/
// uploads/: from the staged archive on disk to the bundle's files on disk), for this checkout and,
// with --base, another one side by side, each round a fresh child per build, alternating. Prints
// the step's time, the longest event-loop gap in it (every model's requests wait that long) and
// the peak RSS above the child's start. The archive is a bundle with --mb MiB of random weights
// (incompressible, as trained weights nearly are), as .tar.gz and as .zip (deflate).
// A checkout from before session 22 reads the archive whole from memory (readArchive(bytes, ...))
// and writes each file; from session 22 on it streams (readArchive(source, ..., sink)).
// Usage: npm run build && node bench/upload-archive-stall.mjs [--base /path/to/other/checkout]
//          [--mb 256] [--rounds 3]
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { open, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { clearInterval, setInterval } from 'node:timers';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { tarEntry, tgz, zip } from '../engine/dist/test/control/archives.js';
import { arg, machine, median } from './stats.mjs';

const LIMITS = { maxFiles: 256, maxFileBytes: 2 * 1024 ** 3, maxTotalBytes: 4 * 1024 ** 3, maxRatio: 100 };

if (process.argv[2] === '--child') {
  const [, , , root, archivePath, format, outDir] = process.argv;
  const load = (p) => import(pathToFileURL(join(root, 'engine/dist/src/control/uploads', p)).href);
  const { readArchive } = await load('archive.js');
  const streaming = readArchive.length === 4;
  const io = streaming ? await load('archive-io.js') : null;
  const rss0 = process.memoryUsage().rss;
  let peak = rss0;
  let maxGap = 0;
  let last = performance.now();
  const iv = setInterval(() => {
    const n = performance.now();
    maxGap = Math.max(maxGap, n - last);
    last = n;
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 1);
  await new Promise((r) => setTimeout(r, 20));
  maxGap = 0;
  last = performance.now();
  const t = performance.now();
  let files;
  if (streaming) {
    const size = (await import('node:fs')).statSync(archivePath).size;
    const handle = await open(archivePath, 'r');
    try {
      files = await readArchive(io.fileSource(handle, size), format, LIMITS, io.directorySink(outDir));
    } finally {
      await handle.close();
    }
  } else {
    const entries = await readArchive(await readFile(archivePath), format, LIMITS);
    for (const [i, e] of entries.entries()) if (e.kind === 'file') await writeFile(join(outDir, `entry-${i}`), e.data);
    files = entries;
  }
  const ms = performance.now() - t;
  clearInterval(iv);
  console.log(JSON.stringify({ ms, maxGap, peakMiB: (peak - rss0) / 2 ** 20, entries: files.length }));
  process.exit(0);
}

const here = resolve(fileURLToPath(new URL('..', import.meta.url)));
const mb = Number(arg('mb', '256'));
const rounds = Number(arg('rounds', '3'));
const baseDir = arg('base', null);
const builds = [['this', here], ...(baseDir ? [['base', resolve(baseDir)]] : [])];

const dir = mkdtempSync(join(tmpdir(), 'upload-archive-stall-'));
try {
  const files = [
    ['manifest.yaml', Buffer.from("format_version: '2.0'\nkind: model\n")],
    ['model.b1.mlir', Buffer.from('module {}\n')],
    ['weights.safetensors', randomBytes(mb * 2 ** 20)],
  ];
  const archives = [
    ['tar.gz', join(dir, 'b.tar.gz')],
    ['zip', join(dir, 'b.zip')],
  ];
  writeFileSync(archives[0][1], tgz(files.map(([n, d]) => tarEntry(n, d))));
  writeFileSync(archives[1][1], zip(files.map(([name, data]) => ({ name, data, deflate: true }))));

  console.log(`# bench/upload-archive-stall, machine: ${machine()}; a bundle with ${mb} MiB of weights`);
  console.log('round format build  step_ms  longest_loop_gap_ms  peak_rss_above_start_mib');
  const results = new Map();
  for (let r = 1; r <= rounds; r++) {
    for (const [format, path] of archives) {
      for (const [name, root] of r % 2 ? builds : [...builds].reverse()) {
        const out = join(dir, `out-${name}`);
        rmSync(out, { recursive: true, force: true });
        mkdirSync(out);
        const child = spawnSync(
          process.execPath,
          [fileURLToPath(import.meta.url), '--child', root, path, format, out],
          {
            encoding: 'utf8',
          },
        );
        const line = child.stdout.trim().split('\n').pop() ?? '';
        if (child.status !== 0 || !line.startsWith('{')) {
          console.log(
            `${String(r).padStart(5)} ${format.padEnd(6)} ${name.padEnd(6)} failed: ${child.stderr.slice(-300)}`,
          );
          continue;
        }
        const x = JSON.parse(line);
        const key = `${format} ${name}`;
        results.set(key, [...(results.get(key) ?? []), x]);
        console.log(
          `${String(r).padStart(5)} ${format.padEnd(6)} ${name.padEnd(6)} ${x.ms.toFixed(0).padStart(7)}  ${x.maxGap.toFixed(1).padStart(19)}  ${x.peakMiB.toFixed(0).padStart(24)}`,
        );
      }
    }
  }
  for (const [key, xs] of results) {
    console.log(
      `${key}: median step ${median(xs.map((x) => x.ms)).toFixed(0)} ms, longest gap ${median(xs.map((x) => x.maxGap)).toFixed(1)} ms, peak RSS +${median(xs.map((x) => x.peakMiB)).toFixed(0)} MiB`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
