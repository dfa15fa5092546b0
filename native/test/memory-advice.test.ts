import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { adviseHugePages, HUGE_PAGE_ADVICE_MIN_BYTES } from '../lib/memory-advice.js';

test('huge-page advice: large fresh buffers only, and the buffer works the same', () => {
  assert.equal(adviseHugePages(Buffer.alloc(4096)), false, 'a small buffer may live in the heap: no advice');
  const big = Buffer.allocUnsafeSlow(HUGE_PAGE_ADVICE_MIN_BYTES + 12_345);
  const advised = adviseHugePages(big.subarray(7));
  // madvise(MADV_HUGEPAGE) succeeds on Linux whenever the kernel has transparent huge pages.
  if (process.platform === 'linux' && existsSync('/sys/kernel/mm/transparent_hugepage/enabled'))
    assert.equal(advised, true);
  big.fill(0xa5);
  assert.equal(big[0], 0xa5);
  assert.equal(big[big.length - 1], 0xa5);
});
