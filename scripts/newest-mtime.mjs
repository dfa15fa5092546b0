// The newest modification time (ms) under a path, 0 when it does not exist: the build scripts
// compare it with their output's to skip work whose inputs have not changed.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export function newest(path) {
  if (!existsSync(path)) return 0;
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let m = 0;
  for (const name of readdirSync(path)) m = Math.max(m, newest(join(path, name)));
  return m;
}
