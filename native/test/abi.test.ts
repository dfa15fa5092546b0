import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { pinnedPluginDir } from '../lib/index.js';

const pkg = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

test('our PJRT ABI declarations match the header shipped in the xla-cpu-pjrt wheel', () => {
  const pin = JSON.parse(readFileSync(join(pkg, 'plugins.json'), 'utf8'))['cpu-openxla'];
  const header = join(pinnedPluginDir('cpu-openxla'), pin.header);
  assert.ok(existsSync(header), `reference header missing at ${header}: run 'npm install'`);
  const r = spawnSync(
    process.env.CXX ?? 'g++',
    ['-std=c++17', '-fsyntax-only', `-I${dirname(header)}`, `-I${join(pkg, 'src')}`, join(pkg, 'test', 'abi_check.cc')],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
});
