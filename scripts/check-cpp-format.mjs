// `npm run lint` for the addon's C++: clang-format (the npm package's own pinned binary, so lint
// needs nothing installed by hand) in dry-run mode against .clang-format; a file it would change
// fails lint. `--fix` rewrites them instead.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const dirs = ['native/src', 'native/test'];
const files = dirs.flatMap((d) =>
  readdirSync(d)
    .filter((f) => /\.(cc|h)$/.test(f))
    .map((f) => join(d, f)),
);
const fix = process.argv.includes('--fix');
const r = spawnSync(
  process.execPath,
  ['node_modules/clang-format/index.js', ...(fix ? ['-i'] : ['--dry-run', '-Werror']), ...files],
  { stdio: 'inherit' },
);
if (r.status === 0) console.log(`clang-format: ${files.length} C++ files ${fix ? 'formatted' : 'ok'}`);
else if (!fix) console.error('clang-format: run `node scripts/check-cpp-format.mjs --fix`');
process.exit(r.status ?? 1);
