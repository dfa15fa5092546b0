import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { suite, test } from 'node:test';
import { readArchive } from '../../src/control/uploads/archive.js';
import { DEFAULT_UPLOAD_LIMITS } from '../../src/control/uploads/upload-service.js';
import { tarEntry, tgz, zip } from './archives.js';

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
    const entries = await readArchive(archive, 'tar.gz', DEFAULT_UPLOAD_LIMITS);
    assert.deepEqual(
      entries.map((e) => [e.name, e.data.length]),
      files.map(([n, d]) => [n, d.length]),
    );
    assert.ok(entries[1]!.data.equals(weights));
  });

  test('a deflated .zip entry of many slices is inflated and its CRC-32 checked', async () => {
    const archive = zip(files.map(([name, data]) => ({ name, data, deflate: true })));
    const entries = await readArchive(archive, 'zip', DEFAULT_UPLOAD_LIMITS);
    assert.ok(entries[1]!.data.equals(weights));
    const bad = zip(
      files.map(([name, data]) => ({ name, data, deflate: true, crc: name === 'manifest.yaml' ? undefined : 1 })),
    );
    await assert.rejects(readArchive(bad, 'zip', DEFAULT_UPLOAD_LIMITS), /weights\.safetensors: CRC-32 does not match/);
  });
});
