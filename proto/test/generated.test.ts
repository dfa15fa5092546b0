import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// dist/test/generated.test.js -> proto/scripts/generate.mjs
const script = fileURLToPath(new URL('../../scripts/generate.mjs', import.meta.url));

function protocAvailable(): boolean {
  const r = spawnSync(process.env.PROTOC || 'protoc', ['--version'], { encoding: 'utf8' });
  return !r.error && r.status === 0;
}

test(
  'proto/generated matches the .proto sources (generate.mjs --check)',
  {
    skip: protocAvailable()
      ? false
      : 'protoc not installed (apt-get install -y protobuf-compiler, or set $PROTOC); generated-code check skipped',
  },
  () => {
    const r = spawnSync(process.execPath, [script, '--check'], { encoding: 'utf8' });
    assert.equal(r.status, 0, `generate.mjs --check failed:\n${r.stdout}${r.stderr}`);
  },
);
