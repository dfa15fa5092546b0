// bench/json-decode: CPU cost of decoding a KServe JSON infer body (parseHttpInfer: the skeleton
// scan and the tensor data straight into FP32), as MB of body per CPU-second of this process, so
// other sessions' load on a shared machine moves it less than wall time would. The body is the
// one bench/large-json.mjs sends (mlp rows of 16- and 17-digit fractions). `--against DIST`
// alternates runs with another build's engine/dist, each in a fresh process.
// Usage: npm run build && nice -n 10 node bench/json-decode.mjs [--mb 20] [--runs 3] [--against DIST]
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const self = fileURLToPath(import.meta.url);
const here = resolve(self, '..', '..', 'engine', 'dist');
const { values } = parseArgs({
  options: {
    mb: { type: 'string', default: '20' },
    runs: { type: 'string', default: '3' },
    against: { type: 'string' },
    dist: { type: 'string' },
  },
});
const bytes = Number(values.mb) * 1e6;

if (values.dist !== undefined) {
  const { largeJsonBody } = await import(`${here}/test/transports/large-json.js`);
  // Builds before session 13 kept the transports in src/kserve.
  const { parseHttpInfer } = await import(`${values.dist}/src/transports/http-infer-body.js`).catch(
    () => import(`${values.dist}/src/kserve/http-infer-body.js`),
  );
  const { body } = largeJsonBody(bytes);
  const rates = [];
  for (let i = 0; i < 3; i++) {
    const t = process.cpuUsage();
    parseHttpInfer('mlp', '', body, undefined, Number.MAX_SAFE_INTEGER);
    const u = process.cpuUsage(t);
    rates.push(body.byteLength / (u.user + u.system));
  }
  console.log(rates.map((r) => r.toFixed(1)).join(' '));
} else {
  const { machine } = await import('./stats.mjs');
  const builds = [['this', here]];
  if (values.against) builds.push(['against', resolve(values.against)]);
  console.log(
    `# bench/json-decode, machine: ${machine()}, ${values.mb} MB body, MB per CPU-second (3 decodes per run)`,
  );
  for (let r = 1; r <= Number(values.runs); r++) {
    for (const [name, dist] of r % 2 === 1 ? builds : [...builds].reverse()) {
      const out = execFileSync(process.execPath, [self, '--dist', dist, '--mb', values.mb], { encoding: 'utf8' });
      console.log(`${name} run ${r}: ${out.trim()}`);
    }
  }
}
