import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import {
  InferenceClient,
  Status,
  SystemSharedMemoryRegion,
  tensor,
  type Datatype,
  type NumericArray,
  type Tensor,
} from '@hloserve/client';
import { readSafetensors } from '@hloserve/engine/bundle/safetensors';
import { examplesDir, startServer, type ServerProcess } from '../src/server-process.js';

interface Reference {
  inputs: Record<string, Tensor>;
  outputs: Record<string, Tensor>;
}

/** Safetensors dtypes the example references use -> the typed array and the wire datatype. */
const ARRAYS: Partial<Record<string, [new (b: ArrayBuffer) => NumericArray, Datatype]>> = {
  f32: [Float32Array, 'FP32'],
  f64: [Float64Array, 'FP64'],
  i32: [Int32Array, 'INT32'],
  i64: [BigInt64Array, 'INT64'],
  u8: [Uint8Array, 'UINT8'],
};

/** A bundle's reference.safetensors as client tensors (input.<name> / output.<name>). */
async function reference(model: string): Promise<Reference> {
  const file = await readSafetensors(join(examplesDir, model, 'reference.safetensors'));
  const ref: Reference = { inputs: {}, outputs: {} };
  for (const t of file.tensors) {
    const known = ARRAYS[t.dtype];
    assert.ok(known, `reference dtype ${t.dtype} is handled by this test`);
    const [Ctor, datatype] = known;
    const data = new Ctor(Uint8Array.from(t.data).buffer);
    const [side, name] = t.name.split(/\.(.*)/s) as ['input' | 'output', string];
    ref[side === 'input' ? 'inputs' : 'outputs'][name] = tensor(data, t.shape, datatype);
  }
  return ref;
}

/** max |got - want| / max |want|, as e2e/python/refdata.py computes it. */
function relError(got: NumericArray, want: NumericArray): number {
  let scale = 1e-6;
  for (const w of want) scale = Math.max(scale, Math.abs(Number(w)));
  let worst = 0;
  for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(Number(got[i]) - Number(want[i])));
  return worst / scale;
}

// Bundles with hooks answer at the client's level (client-reference.json, e2e/test/hooks.test.ts);
// their reference.safetensors is the executable's.
const models = readdirSync(examplesDir).filter(
  (m) =>
    existsSync(join(examplesDir, m, 'reference.safetensors')) &&
    !existsSync(join(examplesDir, m, 'client-reference.json')),
);
const shmFiles = () => readdirSync('/dev/shm').filter((f) => f.startsWith('hloserve-client-'));

suite('@hloserve/client against the real engine: every example model, metadata, shared memory', () => {
  let server: ServerProcess;
  const refs = new Map<string, Reference>();

  before(async () => {
    server = await startServer();
    for (const m of models) refs.set(m, await reference(m));
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  const clients = [
    { label: 'gRPC', make: () => new InferenceClient({ url: server.grpcUrl() }) },
    { label: 'HTTP binary', make: () => new InferenceClient({ url: server.httpUrl(), protocol: 'http' }) },
    {
      label: 'HTTP JSON',
      make: () => new InferenceClient({ url: server.httpUrl(), protocol: 'http', http: { binary: false } }),
    },
  ];

  test('there are example models with references to check', () => {
    assert.ok(models.length >= 3, `models: ${models.join(', ')}`);
  });

  for (const { label, make } of clients) {
    test(`${label}: health, server metadata, repository index, model metadata and config`, async () => {
      const c = make();
      try {
        assert.equal(await c.serverLive(), true);
        assert.equal(await c.serverReady(), true);
        const meta = await c.serverMetadata();
        assert.equal(meta.name, 'hloserve');
        assert.ok(meta.extensions.includes('system_shared_memory'), meta.extensions.join(','));
        const index = await c.repositoryIndex();
        const bundles = readdirSync(examplesDir).filter((m) => existsSync(join(examplesDir, m, 'manifest.yaml')));
        assert.deepEqual(index.map((m) => m.name).sort(), bundles.sort());
        assert.ok(index.every((m) => m.state === 'READY'));
        for (const m of models) {
          const h = c.model(m);
          assert.equal(await h.ready(), true);
          const md = await h.metadata();
          assert.deepEqual(md.inputs.map((i) => i.name).sort(), Object.keys(refs.get(m)!.inputs).sort());
          const cfg = await h.config();
          assert.ok(cfg.maxBatchSize > 0, `${m}: max_batch_size ${cfg.maxBatchSize}`);
          assert.equal(cfg.input.length, md.inputs.length);
        }
        assert.equal(await c.model('no-such-model').ready(), false);
      } finally {
        await c.close();
      }
    });

    test(`${label}: every example model matches its reference outputs`, async () => {
      const c = make();
      try {
        for (const m of models) {
          const ref = refs.get(m)!;
          const res = await c.model(m).infer(ref.inputs);
          for (const [name, want] of Object.entries(ref.outputs)) {
            const got = res.output(name);
            assert.equal(got.datatype, want.datatype, `${m}.${name}`);
            assert.deepEqual(got.shape, want.shape, `${m}.${name}`);
            const err = relError(got.data as NumericArray, want.data as NumericArray);
            assert.ok(err < 1e-4, `${m}.${name}: relative error ${err}`);
          }
        }
      } finally {
        await c.close();
      }
    });

    test(`${label}: an unknown model is NOT_FOUND, a wrong shape INVALID_ARGUMENT, as ClientErrors`, async () => {
      const c = make();
      try {
        await assert.rejects(c.model('no-such-model').metadata(), (e: unknown) => {
          assert.equal((e as { name: string }).name, 'ClientError');
          const err = e as { code: number; httpStatus?: number; catalogueCode?: string; attempts: number };
          assert.equal(err.code, Status.NOT_FOUND);
          assert.equal(err.attempts, 1, 'NOT_FOUND is never retried');
          if (label !== 'gRPC') {
            assert.equal(err.httpStatus, 404);
            assert.equal(err.catalogueCode, 'HLO_ERR_MODEL_NOT_FOUND');
          }
          return true;
        });
        await assert.rejects(c.model('mlp').infer({ x: tensor(new Float32Array(783), [1, 783]) }), {
          code: Status.INVALID_ARGUMENT,
        });
      } finally {
        await c.close();
      }
    });
  }

  test("sharedMemory: 'auto' goes inline when the server cannot open the client's regions; true fails", async () => {
    // Regions made outside /dev/shm stand for a client on another host: the server looks the key
    // up under its own /dev/shm and finds nothing.
    const elsewhere = mkdtempSync(join(tmpdir(), 'hloserve-client-elsewhere-'));
    const c = new InferenceClient({ url: server.grpcUrl(), sharedMemoryRoot: elsewhere });
    try {
      const ref = refs.get('mlp')!;
      await assert.rejects(c.model('mlp').infer(ref.inputs, { sharedMemory: true }), { code: Status.INVALID_ARGUMENT });
      const check = async () => {
        const res = await c.model('mlp').infer(ref.inputs, { sharedMemory: 'auto' });
        assert.ok(relError(res.output('logits').data as Float32Array, ref.outputs.logits!.data as Float32Array) < 1e-4);
      };
      await check();
      assert.deepEqual(readdirSync(elsewhere), [], 'the refused region was removed');
      // Latched inline: with the directory gone, another try at a region would fail to create it.
      rmSync(elsewhere, { recursive: true });
      await check();
      const mine = (await c.systemSharedMemoryStatus()).filter((r) => r.name.startsWith('hloserve-client-'));
      assert.deepEqual(mine, []);
    } finally {
      await c.close();
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  for (const protocol of ['grpc', 'http'] as const) {
    test(`${protocol}: inputs and outputs through caller-registered regions, then unregistered and removed`, async () => {
      const url = protocol === 'grpc' ? server.grpcUrl() : server.httpUrl();
      const c = new InferenceClient({ url, protocol });
      const ref = refs.get('resnet')!;
      const input = ref.inputs.image!;
      const want = ref.outputs.logits!;
      const inBytes = (input.data as Float32Array).byteLength;
      const outBytes = (want.data as Float32Array).byteLength;
      const name = `client-test-${protocol}-${process.pid}`;
      const inRegion = await SystemSharedMemoryRegion.create(`${name}-in`, inBytes);
      const outRegion = await SystemSharedMemoryRegion.create(`${name}-out`, outBytes + 128);
      try {
        const d = input.data as Float32Array;
        await inRegion.write(0, new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
        await c.registerSystemSharedMemory(inRegion);
        await c.registerSystemSharedMemory(outRegion);
        const status = await c.systemSharedMemoryStatus();
        assert.ok(status.some((s) => s.name === inRegion.name && s.byteSize === inBytes));
        const res = await c
          .model('resnet')
          .infer(
            { image: { datatype: 'FP32', shape: input.shape, sharedMemory: { region: inRegion } } },
            { outputs: [{ name: 'logits', sharedMemory: { region: outRegion, offset: 64 } }] },
          );
        const got = res.output('logits');
        assert.deepEqual(got.shape, want.shape);
        assert.ok(relError(got.data as Float32Array, want.data as Float32Array) < 1e-4);
        // The bytes really are in the region, where the server wrote them.
        const raw = await outRegion.read(64, outBytes);
        assert.deepEqual(new Float32Array(raw.buffer), got.data);
        await c.unregisterSystemSharedMemory(inRegion);
        await c.unregisterSystemSharedMemory(outRegion);
        await assert.rejects(c.systemSharedMemoryStatus(inRegion.name), { code: Status.NOT_FOUND });
        // An unregistered region at inference is FAILED_PRECONDITION (and not retried).
        await assert.rejects(
          c
            .model('resnet')
            .infer({ image: { datatype: 'FP32', shape: input.shape, sharedMemory: { region: inRegion } } }),
          { code: Status.FAILED_PRECONDITION, attempts: 1 },
        );
      } finally {
        await inRegion.destroy();
        await outRegion.destroy();
        await c.close();
      }
      assert.ok(!existsSync(`/dev/shm/${name}-in`) && !existsSync(`/dev/shm/${name}-out`));
    });

    test(`${protocol}: sharedMemory: true stages through pooled regions, survives the server forgetting them, and close() removes them`, async () => {
      const url = protocol === 'grpc' ? server.grpcUrl() : server.httpUrl();
      const before = shmFiles();
      const c = new InferenceClient({ url, protocol });
      const mlp = c.model('mlp');
      const ref = refs.get('mlp')!;
      const check = async () => {
        const res = await mlp.infer(ref.inputs, { sharedMemory: true });
        assert.ok(relError(res.output('logits').data as Float32Array, ref.outputs.logits!.data as Float32Array) < 1e-4);
      };
      try {
        await Promise.all([check(), check(), check()]);
        const mine = (await c.systemSharedMemoryStatus()).filter((s) => s.name.startsWith('hloserve-client-'));
        assert.ok(mine.length >= 1 && mine.length <= 3, `pooled regions: ${mine.length}`);
        // A server restart forgets registrations; the next call re-registers once and succeeds.
        await c.unregisterSystemSharedMemory('');
        await check();
      } finally {
        await c.close();
      }
      assert.deepEqual(shmFiles(), before, 'close() removed the pooled /dev/shm objects');
      const probe = new InferenceClient({ url, protocol });
      const left = (await probe.systemSharedMemoryStatus()).filter((s) => s.name.startsWith('hloserve-client-'));
      await probe.close();
      assert.deepEqual(left, [], 'and unregistered them');
    });
  }
});
