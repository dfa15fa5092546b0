import assert from 'node:assert/strict';
import { truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { ServeError } from '@hloserve/common/errors';
import { readSafetensorsData } from '../../src/bundle/safetensors-data.js';
import { readSafetensors } from '../../src/bundle/safetensors.js';
import { writeSafetensors } from '../../src/bundle/safetensors-writer.js';
import { removeDir, tempDir, tensor } from './fixtures.js';

let dir = '';
before(async () => {
  dir = await tempDir();
});
after(async () => removeDir(dir));

const filled = (n: number, seed: number): Float32Array => new Float32Array(n).map((_, i) => seed + i / 8);

// Sizes chosen so that small segments split the file, and one unused tensor is a large gap.
const TENSORS = [
  tensor('embed', 'f32', [64, 300], filled(64 * 300, 1)),
  tensor('bias0', 'f32', [3], filled(3, 2)),
  tensor('unused', 'f32', [1024, 300], filled(1024 * 300, 3)),
  tensor('kernel', 'f32', [300, 20], filled(300 * 20, 4)),
  tensor('bias1', 'f32', [20], filled(20, 5)),
];

suite('readSafetensorsData: named tensors a segment at a time', () => {
  test('the same bytes as the whole file, in the order named, whatever the segment size', async () => {
    const path = join(dir, 'w.safetensors');
    await writeSafetensors(path, TENSORS);
    const whole = await readSafetensors(path);
    const names = ['kernel', 'bias0', 'embed', 'bias1'];
    for (const segmentBytes of [1, 4096, 100_000, 2 ** 30]) {
      const { header, tensors } = await readSafetensorsData(path, names, segmentBytes);
      assert.equal(header.fileSize, whole.fileSize);
      assert.deepEqual(
        tensors.map((t) => t.name),
        names,
      );
      for (const t of tensors) {
        const expected = whole.tensor(t.name)!;
        assert.deepEqual(t.shape, expected.shape);
        assert.ok(Buffer.from(t.data).equals(Buffer.from(expected.data)), `${t.name} at segment ${segmentBytes}`);
        // A tensor sits at its file offset's place within a page, as in a whole-file buffer.
        assert.equal(t.data.byteOffset % 4096, t.byteOffset % 4096, t.name);
      }
    }
  });

  test('neighbours share a segment; a large unused tensor between two is not read', async () => {
    const path = join(dir, 'gap.safetensors');
    await writeSafetensors(path, TENSORS);
    const { tensors } = await readSafetensorsData(path, ['embed', 'bias0', 'kernel', 'bias1']);
    const [embed, bias0, kernel, bias1] = tensors;
    assert.equal(embed!.data.buffer, bias0!.data.buffer);
    assert.equal(kernel!.data.buffer, bias1!.data.buffer);
    assert.notEqual(bias0!.data.buffer, kernel!.data.buffer);
    const unused = 1024 * 300 * 4;
    assert.ok(embed!.data.buffer.byteLength < unused, `${embed!.data.buffer.byteLength} bytes read with embed`);
  });

  test('a name not in the file is left out; a cut file is the bundle error', async () => {
    const path = join(dir, 'short.safetensors');
    await writeSafetensors(path, TENSORS);
    const { header, tensors } = await readSafetensorsData(path, ['bias0', 'nope']);
    assert.deepEqual(
      tensors.map((t) => t.name),
      ['bias0'],
    );
    await truncate(path, header.entry('bias1')!.byteOffset + 4);
    await assert.rejects(
      readSafetensorsData(path, ['bias1']),
      (err: unknown) => err instanceof ServeError && err.code === 'HLO_ERR_BUNDLE_INVALID',
    );
  });

  test('a file past 2 GiB (where fs.readFile stops) is read', async () => {
    // Sparse: the data section is a hole, so the file costs no disk and reads fast.
    const path = join(dir, 'big.safetensors');
    const elements = 2 ** 29 + 2 ** 18; // 2 GiB + 1 MiB of f32
    const json = Buffer.from(
      JSON.stringify({
        __metadata__: { argument_order: '["w","b"]' },
        b: { dtype: 'F32', shape: [4], data_offsets: [0, 16] },
        w: { dtype: 'F32', shape: [elements], data_offsets: [16, 16 + elements * 4] },
      }).padEnd(128, ' '),
    );
    const prefix = Buffer.alloc(8);
    prefix.writeBigUInt64LE(BigInt(json.length));
    await writeFile(path, Buffer.concat([prefix, json]));
    await truncate(path, 8 + json.length + 16 + elements * 4);
    const { tensors } = await readSafetensorsData(path, ['w', 'b']);
    assert.deepEqual(
      tensors.map((t) => [t.name, t.data.byteLength]),
      [
        ['w', elements * 4],
        ['b', 16],
      ],
    );
    assert.equal(tensors[0]!.data[elements * 4 - 1], 0);
  });
});
