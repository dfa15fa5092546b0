// An engine serving mlp from fresh state, set up through the first-run API, with an admin token for
// the console: what the console benches open their tabs against.
/* global fetch */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** `start` is e2e's startServer (of this checkout or of another build); `label` names it in errors. */
export async function startConsoleEngine(start, label = 'engine') {
  const stateDir = mkdtempSync(join(tmpdir(), 'hloserve-console-bench-'));
  const server = await start({
    HLOSERVE_MODELS_INCLUDE: 'mlp',
    HLOSERVE_STATE_URL: `sqlite:${join(stateDir, 'state.sqlite')}`,
  });
  const setupLine = server.logs.find((l) => l.includes('"setupToken"'));
  const setupToken = setupLine ? JSON.parse(setupLine).setupToken : null;
  if (!setupToken) throw new Error(`${label}: no setup token in the log (state not fresh?)`);
  const consoleUrl = `http://127.0.0.1:${server.ports.console}`;
  const r = await fetch(`${consoleUrl}/api/v1/setup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ setupToken }),
  });
  if (!r.ok) throw new Error(`${label}: setup: ${r.status} ${await r.text()}`);
  const token = (await r.json()).data.token;
  return {
    label,
    server,
    token,
    consoleUrl,
    metricsUrl: `http://127.0.0.1:${server.ports.metrics}/metrics`,
    stop: async () => {
      await server.stop();
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
