import { suite, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// dist/test/cli/ -> the engine package and the repository root
const engineDir = fileURLToPath(new URL('../../../', import.meta.url));
const repoRoot = join(engineDir, '..');
const bin = join(engineDir, 'bin', 'hloserve.js');

function hloserve(...args: string[]) {
  // Run as an installed command would be: the executable launcher, by its shebang.
  return spawnSync(bin, args, { encoding: 'utf8', timeout: 60_000 });
}

suite('the hloserve command', () => {
  test('--help is the usage block of docs/cli.md, word for word', () => {
    const r = hloserve('--help');
    assert.equal(r.status, 0, r.stderr);
    const doc = readFileSync(join(repoRoot, 'docs', 'cli.md'), 'utf8');
    const block = /## Usage[\s\S]*?```text\n([\s\S]*?)\n```/.exec(doc);
    assert.ok(block, 'docs/cli.md has a ```text block under "## Usage"');
    assert.equal(r.stdout.trimEnd(), block[1]);
    assert.equal(hloserve('help').stdout, r.stdout);
  });

  test('version names hloserve, node and the pinned plugin', () => {
    const r = hloserve('version');
    assert.equal(r.status, 0, r.stderr);
    const { version } = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string };
    assert.match(r.stdout, new RegExp(`^hloserve ${version.replace(/\./g, '\\.')}\n`));
    assert.match(r.stdout, new RegExp(`node ${process.versions.node}`));
    assert.match(r.stdout, /cpu plugin lammps-jax-pjrt-cpu \S+ \(PJRT C API \S+\)/);
  });

  test('check prints every example model with its inputs and outputs', () => {
    const r = hloserve('check', join(repoRoot, 'examples', 'models'));
    assert.equal(r.status, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /^mlp: ok \(model, batch sizes 1 4 8 16 32, /m);
    assert.match(r.stdout, /^ {2}input {2}x {2}FP32 \[-1, 784\] \(nf\)$/m);
    assert.match(r.stdout, /^ {2}output logits {2}FP32 \[-1, 10\] \(nk\)$/m);
    for (const name of ['fno', 'resnet']) assert.match(r.stdout, new RegExp(`^${name}: ok`, 'm'));
  });

  test('EXPECTED FAILURE - check of a broken bundle prints its error and exits 1', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hloserve-check-'));
    const bundle = join(dir, 'broken');
    try {
      cpSync(join(repoRoot, 'examples', 'models', 'mlp'), bundle, { recursive: true });
      const manifest = join(bundle, 'manifest.yaml');
      writeFileSync(manifest, readFileSync(manifest, 'utf8').replace(/format_version:.*\n/, 'format_version: "9.9"\n'));
      const one = hloserve('check', bundle);
      assert.equal(one.status, 1, one.stdout + one.stderr);
      assert.match(one.stdout, /^broken: error HLO_ERR_BUNDLE_INVALID: .*manifest\.yaml: format_version/m);
      // In a repository, the valid bundles are still listed beside the broken one.
      cpSync(join(repoRoot, 'examples', 'models', 'mlp'), join(dir, 'mlp'), { recursive: true });
      const repo = hloserve('check', dir);
      assert.equal(repo.status, 1);
      assert.match(repo.stdout, /^mlp: ok/m);
      assert.match(repo.stdout, /^broken: error /m);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('EXPECTED FAILURE - a usage error exits 2 with the usage', () => {
    for (const args of [[], ['bogus'], ['check'], ['serve', 'extra'], ['--no-such-flag']]) {
      const r = hloserve(...args);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /^hloserve: .+\n\nusage: hloserve <command>/);
    }
  });
});
