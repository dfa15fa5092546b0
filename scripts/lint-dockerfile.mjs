// `npm run lint` for the Dockerfile: hadolint from PyPI (pinned in scripts/requirements-lint.txt),
// set up like the tests' tools in the checkout's .cache, so lint needs nothing installed by hand.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot, SetupNeedsAction, setupTests } from './setup-tests.mjs';

let env;
try {
  env = setupTests(['hadolint']);
} catch (err) {
  console.error(`lint-dockerfile: ${err.message}`);
  process.exit(err instanceof SetupNeedsAction ? 2 : 1);
}
const r = spawnSync(env.HLOSERVE_HADOLINT, ['--no-color', join(repoRoot, 'Dockerfile')], { stdio: 'inherit' });
if (r.status === 0) console.log('hadolint: Dockerfile ok');
process.exit(r.status ?? 1);
