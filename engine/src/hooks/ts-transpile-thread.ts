/**
 * The body of a short-lived worker thread that turns one TypeScript hooks file into JavaScript
 * (hook-source.ts). The compiler is 9 MB of JavaScript: importing it took the serving thread 0.4-0.9
 * s, and every model's requests waited that long whenever a bundle with a TypeScript hook loaded.
 */
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';

/** What the thread is given, and what it answers. */
export interface TranspileJob {
  readonly text: string;
  readonly path: string;
}
export type TranspileAnswer = { readonly code: string } | { readonly error: string };

const { text, path } = workerData as TranspileJob;
// required, not imported: as an ES import the 9 MB CommonJS compiler is also scanned for its
// named exports, which took 0.7 s against 0.25 s here.
const ts = createRequire(import.meta.url)('typescript') as typeof import('typescript');
const out = ts.transpileModule(text, {
  fileName: path,
  reportDiagnostics: true,
  compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, sourceMap: false },
});
const errors = (out.diagnostics ?? []).filter((d) => d.category === ts.DiagnosticCategory.Error);
const answer: TranspileAnswer =
  errors.length > 0
    ? { error: ts.flattenDiagnosticMessageText(errors[0]!.messageText, '\n') }
    : { code: out.outputText };
parentPort!.postMessage(answer);
