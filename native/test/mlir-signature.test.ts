import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import {
  MAIN_SIGNATURE_MAX_CHARS,
  MainSignatureScanner,
  type MainScanOutcome,
  parseMainSignature,
  programSignature,
  scanMainSignatureBytes,
} from '../lib/mlir-signature.js';

const MODULE = [
  'module @jit_f attributes {mhlo.num_partitions = 1 : i32} {',
  '  func.func public @main(%arg0: tensor<?x4xf32> {mhlo.sharding = "{replicated}", jax.arg_info = "x€"},',
  '      %arg1: tensor<4x3xbf16>) -> (tensor<?x3xf32> {jax.result_info = "[0]"}, tensor<i32>) {',
  '    %c = stablehlo.constant dense<"0x0000803F"> : tensor<1xf32>',
  '    return %arg0, %arg1 : tensor<?x3xf32>, tensor<i32>',
  '  }',
  '}',
  '',
].join('\n');

const SIGNATURE = {
  parameters: [
    { dtype: 'f32', shape: [-1, 4] },
    { dtype: 'bf16', shape: [4, 3] },
  ],
  results: [
    { dtype: 'f32', shape: [-1, 3] },
    { dtype: 'i32', shape: [] },
  ],
};

/** Feeds `pieces` and returns the first outcome, with the index of the piece that gave it. */
function scanPieces(pieces: readonly string[]): { outcome: MainScanOutcome; at: number } {
  const scanner = new MainSignatureScanner();
  for (let i = 0; i < pieces.length; i++) {
    const outcome = scanner.push(pieces[i]!, i === pieces.length - 1);
    if (outcome) return { outcome, at: i };
  }
  throw new Error('no outcome after the last piece');
}

suite('MainSignatureScanner: text in pieces', () => {
  test('the signature is the same wherever the text is cut in two', () => {
    for (let cut = 0; cut <= MODULE.length; cut++) {
      const { outcome } = scanPieces([MODULE.slice(0, cut), MODULE.slice(cut)]);
      assert.deepEqual(outcome, { state: 'read', signature: SIGNATURE }, `cut at ${cut}`);
    }
  });

  test('one character at a time, answered once the signature has been read', () => {
    const { outcome, at } = scanPieces([...MODULE]);
    assert.deepEqual(outcome, { state: 'read', signature: SIGNATURE });
    assert.ok(at < MODULE.indexOf('%c ='), `answered at ${at}, before the body`);
  });

  test('a single-result signature without parentheses, cut anywhere', () => {
    const text = 'func.func @main(%a: tensor<4xf32>) -> tensor<4xi64> {\n  return %a : tensor<4xi64>\n}\n';
    for (let cut = 0; cut <= text.length; cut++) {
      const { outcome } = scanPieces([text.slice(0, cut), text.slice(cut)]);
      assert.deepEqual(
        outcome,
        {
          state: 'read',
          signature: { parameters: [{ dtype: 'f32', shape: [4] }], results: [{ dtype: 'i64', shape: [4] }] },
        },
        `cut at ${cut}`,
      );
    }
  });

  test('a main with no results, and one whose text ends after its arguments', () => {
    const none = { state: 'read', signature: { parameters: [{ dtype: 'f32', shape: [] }], results: [] } };
    assert.deepEqual(scanPieces(['func.func @main(%a: tensor<f32>) {', ' }']).outcome, none);
    assert.deepEqual(scanPieces(['func.func @main(%a: tensor<f32>)', ' ']).outcome, none);
  });

  test('@main after megabytes of other functions is found, and only a tail is held meanwhile', () => {
    const other = 'func.func private @f(%a: tensor<f32>) -> tensor<f32> { return %a : tensor<f32> }\n';
    const filler = other.repeat(Math.ceil(2 ** 21 / other.length));
    const pieces: string[] = [];
    const text = filler + MODULE;
    for (let i = 0; i < text.length; i += 65_536) pieces.push(text.slice(i, i + 65_536));
    assert.deepEqual(scanPieces(pieces).outcome, { state: 'read', signature: SIGNATURE });
  });

  test('no @main: absent only once the text has ended', () => {
    const scanner = new MainSignatureScanner();
    assert.equal(scanner.push('module {\n  func.func public @mai', false), null);
    assert.deepEqual(scanner.push('n_not(%a: tensor<f32>)\n}\n', true), { state: 'absent' });
    assert.deepEqual(scanPieces(['hello']).outcome, { state: 'absent' });
  });

  test('types it cannot read are unreadable at once, not after the rest of the text', () => {
    const { outcome, at } = scanPieces([
      'func.func public @main(%arg0: tuple<tensor<1xf32>>) -> tensor<1xf32> {',
      ' '.repeat(100),
      '}',
    ]);
    assert.equal(outcome.state, 'unreadable');
    assert.equal(at, 0);
    assert.equal(scanPieces(['func.func @main(%a: tensor<f32>) -> i32 {', '}']).outcome.state, 'unreadable');
  });

  test('a signature cut off by the end of the text is unreadable', () => {
    assert.equal(scanPieces(['func.func @main(%a: tensor<f32>', ', %b: tensor<f32>']).outcome.state, 'unreadable');
    assert.equal(scanPieces(['func.func @main(%a: tensor<f32>) -> (tensor<f32>']).outcome.state, 'unreadable');
  });

  test('a signature longer than the limit is refused instead of held', () => {
    const scanner = new MainSignatureScanner();
    assert.equal(scanner.push('func.func @main(%a: tensor<f32> {x = "', false), null);
    const piece = 'x'.repeat(2 ** 20);
    let outcome: MainScanOutcome | null = null;
    for (let i = 0; outcome === null && i < 20; i++) outcome = scanner.push(piece, false);
    assert.ok(outcome && outcome.state === 'unreadable', JSON.stringify(outcome));
    assert.match(outcome.why, new RegExp(`runs past ${MAIN_SIGNATURE_MAX_CHARS} characters`));
  });
});

suite('programSignature: bytes a slice at a time', () => {
  const bytes = new TextEncoder().encode(MODULE);

  test('every slice size, multi-byte characters split across slices included', () => {
    for (const slice of [1, 2, 3, 5, 64, bytes.byteLength]) {
      assert.deepEqual(scanMainSignatureBytes(bytes, slice), { state: 'read', signature: SIGNATURE }, `slice ${slice}`);
    }
  });

  test('as parseMainSignature over the whole text', () => {
    assert.deepEqual(programSignature(bytes), SIGNATURE);
    assert.deepEqual(parseMainSignature(MODULE), SIGNATURE);
    assert.equal(programSignature(new Uint8Array(0)), null);
    assert.equal(programSignature(new Uint8Array([0x4d, 0x4c, 0xef, 0x52, 0, 0])), null);
  });
});
