// bench/dispose-block: how long retiring a model's executables blocks the JS thread (issue 12):
// dispose() against disposeInBackground() on the example MLP's five compiled batch sizes, CPU plugin,
// alternating, 10 rounds. Usage: npm run build && node bench/dispose-block.mjs
import { fileURLToPath } from 'node:url';
import { readFileSync, readdirSync } from 'node:fs';
import { Runtime } from '../native/dist/lib/index.js';
const rt = await Runtime.create();
const dir = fileURLToPath(new URL('../examples/models/mlp', import.meta.url));
const mods = readdirSync(dir)
  .filter((f) => /^model\.b\d+\.mlir$/.test(f))
  .map((f) => readFileSync(`${dir}/${f}`));
const res = { sync: [], background: [] };
for (let r = 0; r < 10; r++) {
  for (const how of r % 2 ? ['sync', 'background'] : ['background', 'sync']) {
    const exes = await Promise.all(mods.map((m) => rt.compile(m)));
    const t = performance.now();
    for (const e of exes) {
      if (how === 'sync') e.dispose();
      else e.disposeInBackground();
    }
    res[how].push((performance.now() - t) * 1e3);
    await new Promise((r) => setTimeout(r, 300));
  }
}
const med = (a) => a.sort((x, y) => x - y)[a.length >> 1];
console.log(
  `${mods.length} executables: JS thread blocked, median of 10: dispose() ${med(res.sync).toFixed(0)} us, disposeInBackground() ${med(res.background).toFixed(0)} us`,
);
console.log(JSON.stringify(Object.fromEntries(Object.entries(res).map(([k, v]) => [k, v.map((x) => Math.round(x))]))));
rt.dispose();
