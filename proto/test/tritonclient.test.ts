import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// dist/test/tritonclient.test.js -> proto/test/tritonclient_wire_check.py (about 2 s)
const script = fileURLToPath(new URL('../../test/tritonclient_wire_check.py', import.meta.url));
const python = process.env.PYTHON || 'python3';

function tritonclientAvailable(): boolean {
  const r = spawnSync(python, ['-c', 'import tritonclient.grpc, numpy'], { encoding: 'utf8' });
  return !r.error && r.status === 0;
}

test(
  'wire compatibility with the real tritonclient (tritonclient_wire_check.py)',
  {
    skip: tritonclientAvailable()
      ? false
      : `${python} cannot import tritonclient.grpc (pip install 'tritonclient[grpc]'); tritonclient wire check skipped`,
  },
  () => {
    const r = spawnSync(python, [script], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, `tritonclient_wire_check.py failed:\n${r.stdout}${r.stderr}`);
  },
);
