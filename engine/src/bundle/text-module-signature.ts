/**
 * A text module's `@main` signature, read from the start of its file a slice at a time. The whole
 * text is never needed: the signature is usually in the first lines, and a module that carries its
 * constants inline can be hundreds of MB, which decoded and searched at once held the event loop
 * (and every other model's requests) for hundreds of ms, and past V8's longest string failed the load.
 */
import type { FileHandle } from 'node:fs/promises';
import { MainSignatureScanner, type ProgramSignature } from '@hloserve/native/mlir-signature';
import { bundleError } from './bundle-error.js';

/** Bytes read per slice; each read is a turn of the event loop. */
export const TEXT_SLICE_BYTES = 2 ** 20;

/** The signature, or the bundle error that names the file; `handle` stays open. */
export async function readTextModuleSignature(
  handle: FileHandle,
  path: string,
  sliceBytes = TEXT_SLICE_BYTES,
): Promise<ProgramSignature> {
  const decoder = new TextDecoder();
  const scanner = new MainSignatureScanner();
  const slice = Buffer.allocUnsafe(sliceBytes);
  for (let position = 0; ;) {
    const { bytesRead } = await handle.read(slice, 0, sliceBytes, position);
    position += bytesRead;
    const last = bytesRead === 0;
    const outcome = scanner.push(decoder.decode(slice.subarray(0, bytesRead), { stream: !last }), last);
    if (outcome === null) continue;
    if (outcome.state === 'read') return outcome.signature;
    if (outcome.state === 'absent') {
      throw bundleError(
        path,
        null,
        'neither MLIR bytecode (no ML\\xEFR magic) nor MLIR text with a func.func @main; is this a StableHLO module?',
      );
    }
    throw bundleError(path, '@main', `cannot read its signature; ${outcome.why}`);
  }
}
