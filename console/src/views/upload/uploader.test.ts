import { describe, expect, test } from 'vitest';
import { modelNameFrom, runUpload, type UploadProgress, type UploadRow, type UploadTransport } from './uploader.js';

class FakeServer implements UploadTransport {
  offset = 0;
  received: number[] = [];
  failNext = 0;
  cancelled = false;
  rejectWith: string | null = null;
  constructor(readonly size: number) {}
  row(state: UploadRow['state'] = 'receiving'): UploadRow {
    return {
      id: 'u1',
      filename: 'm.tar',
      model: 'm',
      sizeBytes: this.size,
      offsetBytes: this.offset,
      sha256: null,
      state,
      error: this.rejectWith,
    };
  }
  async create() {
    return this.row();
  }
  async sendChunk(_id: string, offset: number, chunk: Blob, signal: AbortSignal) {
    if (signal.aborted) throw new DOMException('aborted', 'AbortError');
    expect(offset).toBe(this.offset); // the client always sends from where the server stands
    if (this.failNext > 0) {
      this.failNext--;
      // The server kept half of it before the connection dropped.
      this.offset += Math.floor(chunk.size / 2);
      throw new Error('connection reset');
    }
    this.received.push(chunk.size);
    this.offset += chunk.size;
    return this.row();
  }
  async status() {
    return this.row();
  }
  async complete() {
    return this.row(this.rejectWith ? 'rejected' : 'installed');
  }
  async cancel() {
    this.cancelled = true;
  }
}

const file = (size: number) => Object.assign(new Blob([new Uint8Array(size)]), { name: 'm.tar' });

describe('runUpload', () => {
  test('sends the archive in chunks, reports progress, then validates and installs', async () => {
    const server = new FakeServer(10);
    const seen: UploadProgress[] = [];
    const end = await runUpload(file(10), 'm', server, (p) => seen.push(p), new AbortController().signal, {
      chunkBytes: 4,
    });
    expect(server.received).toEqual([4, 4, 2]);
    expect(seen.map((p) => `${p.step}:${p.sentBytes}`)).toEqual([
      'uploading:4',
      'uploading:8',
      'uploading:10',
      'validating:10',
      'done:10',
    ]);
    expect(end.step).toBe('done');
  });

  test('after a failed chunk it resumes from the offset the server reports', async () => {
    const server = new FakeServer(8);
    server.failNext = 1;
    const end = await runUpload(file(8), 'm', server, () => {}, new AbortController().signal, { chunkBytes: 4 });
    expect(end.step).toBe('done');
    expect(server.offset).toBe(8);
    // The failed chunk left 2 bytes on the server: the next chunk starts at 2, the last at 6.
    expect(server.received).toEqual([4, 2]);
  });

  test('gives up after the retries and says why', async () => {
    const server = new FakeServer(8);
    server.failNext = 10;
    const end = await runUpload(file(8), 'm', server, () => {}, new AbortController().signal, {
      chunkBytes: 8,
      maxRetries: 2,
    });
    expect(end).toMatchObject({ step: 'failed', error: 'connection reset' });
  });

  test('a rejected bundle fails with the server reason', async () => {
    const server = new FakeServer(4);
    server.rejectWith = 'manifest.yaml: inputs[0].dtype: unknown dtype "float99"';
    const end = await runUpload(file(4), 'm', server, () => {}, new AbortController().signal);
    expect(end).toMatchObject({ step: 'failed', error: server.rejectWith });
  });

  test('cancel stops sending and deletes the upload on the server', async () => {
    const server = new FakeServer(12);
    const ac = new AbortController();
    const end = await runUpload(
      file(12),
      'm',
      server,
      (p) => {
        if (p.sentBytes >= 4) ac.abort();
      },
      ac.signal,
      { chunkBytes: 4 },
    );
    expect(end.step).toBe('cancelled');
    expect(server.received).toEqual([4]);
    expect(server.cancelled).toBe(true);
  });

  test('names the model after the archive', () => {
    expect(modelNameFrom('resnet.tar.gz')).toBe('resnet');
    expect(modelNameFrom('My Model.zip')).toBe('My-Model');
  });
});
