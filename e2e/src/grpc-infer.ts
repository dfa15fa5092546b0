import { credentials } from '@grpc/grpc-js';
import { GRPCInferenceClient, type ModelInferRequest, type ModelInferResponse } from '@hloserve/proto';

interface RawClient {
  modelInfer(req: ModelInferRequest, cb: (err: Error | null, res?: ModelInferResponse) => void): void;
  close(): void;
}

/** A minimal FP32 KServe client over grpc-js, for tests and benches. */
export class Fp32Client {
  readonly #c: RawClient;
  constructor(url: string) {
    this.#c = new GRPCInferenceClient(url, credentials.createInsecure(), {
      'grpc.max_receive_message_length': -1,
      'grpc.max_send_message_length': -1,
    }) as unknown as RawClient;
  }

  infer(model: string, input: string, shape: readonly number[], data: Float32Array): Promise<Float32Array> {
    const req: ModelInferRequest = {
      modelName: model,
      modelVersion: '',
      id: '',
      parameters: new Map(),
      inputs: [{ name: input, datatype: 'FP32', shape: [...shape], parameters: new Map(), contents: undefined }],
      outputs: [],
      rawInputContents: [new Uint8Array(data.buffer, data.byteOffset, data.byteLength)],
    };
    return new Promise((resolve, reject) =>
      this.#c.modelInfer(req, (err, res) => {
        if (err) return reject(err);
        const raw = res!.rawOutputContents[0]!;
        // Copy: the view may not be 4-byte aligned.
        resolve(new Float32Array(Uint8Array.from(raw).buffer));
      }),
    );
  }

  close(): void {
    this.#c.close();
  }
}
