import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { suite, test } from 'node:test';
import type { ArchiveFormat } from '../../src/control/uploads/archive-entries.js';
import { readArchive } from '../../src/control/uploads/archive.js';
import { bufferSource, memorySink } from '../../src/control/uploads/archive-io.js';
import { DEFAULT_UPLOAD_LIMITS } from '../../src/control/uploads/upload-service.js';
import { tar, tarEntry, tgz, zip } from './archives.js';

/** Reads `archive` and returns each file's name and bytes. */
async function read(archive: Buffer, format: ArchiveFormat, chunkBytes?: number): Promise<[string, Buffer][]> {
  const sink = memorySink();
  const entries = await readArchive(bufferSource(archive, chunkBytes), format, DEFAULT_UPLOAD_LIMITS, sink);
  return entries.filter((e) => e.kind === 'file').map((e) => [e.name, sink.bytes(e.index)!]);
}

suite('readArchive: files streamed to the sink', () => {
  const files: [string, Buffer][] = [
    ['manifest.yaml', Buffer.from("format_version: '2.0'\nkind: model\n")],
    ['empty', Buffer.alloc(0)],
    ['model.b1.mlir', Buffer.from('module {}\n'.repeat(100))],
    ['weights.safetensors', randomBytes(3000)],
  ];

  test('tar, tar.gz and zip give the same files, however the archive is cut into chunks', async () => {
    const archives: [ArchiveFormat, Buffer][] = [
      ['tar', tar([tarEntry('b/', '', { type: '5' }), ...files.map(([n, d]) => tarEntry(`b/${n}`, d))])],
      ['tar.gz', tgz(files.map(([n, d]) => tarEntry(n, d)))],
      ['zip', zip(files.map(([name, data], i) => ({ name, data, deflate: i % 2 === 0 })))],
    ];
    for (const [format, archive] of archives) {
      for (const chunk of [1, 7, 511, 512, 513, 4096, undefined]) {
        const got = await read(archive, format, chunk);
        assert.deepEqual(
          got.map(([n, d]) => [n.replace(/^b\//, ''), d.toString('base64')]),
          files.map(([n, d]) => [n, d.toString('base64')]),
          `${format}, chunks of ${chunk ?? 'default'} bytes`,
        );
      }
    }
  });
});

suite('readArchive: archives of real size under the default limits', () => {
  // Trained weights barely compress: an archive is about as large as its bundle.
  const weights = randomBytes(48 * 2 ** 20);
  const files = [
    ['manifest.yaml', Buffer.from("format_version: '2.0'\nkind: model\n")],
    ['weights.safetensors', weights],
  ] as const;

  test('a .tar.gz over 42 MB (100:1 of it is past the longest Buffer) is read', async () => {
    const archive = tgz(files.map(([n, d]) => tarEntry(n, d)));
    assert.ok(archive.length * DEFAULT_UPLOAD_LIMITS.maxRatio > 2 ** 32, `${archive.length} bytes`);
    const got = await read(archive, 'tar.gz');
    assert.deepEqual(
      got.map(([n, d]) => [n, d.length]),
      files.map(([n, d]) => [n, d.length]),
    );
    assert.ok(got[1]![1].equals(weights));
  });

  test('a deflated .zip entry of many chunks is inflated and its CRC-32 checked', async () => {
    const archive = zip(files.map(([name, data]) => ({ name, data, deflate: true })));
    assert.ok((await read(archive, 'zip'))[1]![1].equals(weights));
    const bad = zip(
      files.map(([name, data]) => ({ name, data, deflate: true, crc: name === 'manifest.yaml' ? undefined : 1 })),
    );
    await assert.rejects(read(bad, 'zip'), /weights\.safetensors: CRC-32 does not match/);
  });
});

suite('readArchive: a sink that fails', () => {
  const files: [string, Buffer][] = [
    ['manifest.yaml', Buffer.from("format_version: '2.0'\n")],
    ['weights.safetensors', randomBytes(200_000)],
  ];
  const full = {
    async open() {
      return {
        write: async () => {
          throw new Error('ENOSPC: no space left on device, write');
        },
        close: async () => {},
      };
    },
  };

  test('its error comes back as it is, not as a corrupt archive', async () => {
    const archives: [ArchiveFormat, Buffer][] = [
      ['tar', tar(files.map(([n, d]) => tarEntry(n, d)))],
      ['tar.gz', tgz(files.map(([n, d]) => tarEntry(n, d)))],
      ['zip', zip(files.map(([name, data]) => ({ name, data, deflate: true })))],
    ];
    for (const [format, archive] of archives)
      await assert.rejects(
        readArchive(bufferSource(archive, 4096), format, DEFAULT_UPLOAD_LIMITS, full),
        /^Error: ENOSPC/,
        format,
      );
  });
});
