import { after, before, suite, test } from 'node:test';
import { hookTarget, startHookSurface, type HookSurface } from './hook-surfaces.js';
import { expectNoFindings } from './surfaces.js';

// A short, seeded run for npm test; bench/fuzz.mjs runs the same target for longer.
const SEED = 29;

suite('fuzz: whatever a hook returns or throws fails only its request, in the catalogue', () => {
  let s: HookSurface;
  before(async () => {
    s = await startHookSurface();
  });
  after(() => s?.close());

  test('preprocess, postprocess and a meta model run returning, throwing and calling anything', () =>
    expectNoFindings(hookTarget(s), 150, SEED));
});
