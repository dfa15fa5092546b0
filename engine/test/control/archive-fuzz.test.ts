import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { ServeError } from '@hloserve/common/errors';
import type { ArchiveFormat } from '../../src/control/uploads/archive-entries.js';
import { readArchive } from '../../src/control/uploads/archive.js';
import { bufferSource, memorySink } from '../../src/control/uploads/archive-io.js';
import { bundleFiles } from '../../src/control/uploads/bundle-files.js';
import { tar, tarEntry, tgz, zip } from './archives.js';

const LIMITS = { maxFiles: 64, maxFileBytes: 1 << 20, maxTotalBytes: 4 << 20, maxRatio: 100 };
const N = 100_000;
const CHUNKS = [61, 511, 512, 513, 4096, 1 << 20];

/** xorshift32: the same inputs on every run, so a failure names a reproducible case. */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 2 ** 32;
  };
}

const files = [
  ['manifest.yaml', 'format_version: "2.0"\nkind: model\n'],
  ['model.b1.mlir', 'module {}'],
  ['weights.safetensors', Buffer.alloc(300, 7)],
] as const;
const seeds: [ArchiveFormat, Buffer][] = [
  ['tar', tar(files.map(([n, d]) => tarEntry(n, d)))],
  ['tar', tar(files.map(([n, d]) => tarEntry(`b/${n}`, d)))],
  ['tar.gz', tgz(files.map(([n, d]) => tarEntry(n, d)))],
  ['zip', zip(files.map(([name, data]) => ({ name, data })))],
  ['zip', zip(files.map(([name, data]) => ({ name, data, deflate: true })))],
];

function mutate(r: () => number, src: Buffer): Buffer {
  const b = Buffer.from(src);
  const int = (n: number) => Math.floor(r() * n);
  switch (int(6)) {
    case 0: // flip a few bytes
      for (let k = 1 + int(8); k > 0; k--) b[int(b.length)] = int(256);
      return b;
    case 1: // truncate
      return b.subarray(0, int(b.length));
    case 2: // write a big or boundary number somewhere
      if (b.length >= 4) b.writeUInt32LE([0xffffffff, 0x7fffffff, 0, 1, 512, b.length][int(6)]!, int(b.length - 3));
      return b;
    case 3: {
      // splice a piece of the archive into itself
      const from = int(b.length);
      const to = int(b.length);
      return Buffer.concat([b.subarray(0, to), b.subarray(from, from + int(600)), b.subarray(to)]);
    }
    case 4: // random bytes
      return Buffer.from(Array.from({ length: int(2048) }, () => int(256)));
    default: {
      // zero a header-sized region
      const at = int(b.length);
      b.fill(0, at, Math.min(b.length, at + int(64)));
      return b;
    }
  }
}

suite('archive parsers under generated input', () => {
  test(`${N} mutated .tar / .tar.gz / .zip inputs: each is read or refused with BUNDLE_INVALID, never a crash`, async () => {
    const r = rng(0x5eed);
    let refused = 0;
    for (let i = 0; i < N; i++) {
      const [format, seed] = seeds[i % seeds.length]!;
      const input = mutate(r, seed);
      try {
        // Chunks of several sizes, so that headers and data also straddle chunk boundaries.
        const source = bufferSource(input, CHUNKS[i % CHUNKS.length]);
        bundleFiles(await readArchive(source, format, LIMITS, memorySink()), { allowHooks: false });
      } catch (err) {
        if (!(err instanceof ServeError) || err.code !== 'HLO_ERR_BUNDLE_INVALID')
          assert.fail(
            `input ${i} (${format}, ${input.length} bytes, base64 ${input.toString('base64').slice(0, 200)}): ${(err as Error).stack}`,
          );
        refused++;
      }
    }
    assert.ok(refused > N / 2, `most mutations are refused (${refused})`);
  });
});
