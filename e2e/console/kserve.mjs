/* global fetch */
// Inference traffic for the console specs and bench: KServe V2 over HTTP/JSON, inputs of zeros
// shaped from the model's own metadata, so any example model can be driven without its bundle.
/** @type {Map<string, { name: string, datatype: string, shape: number[] }[]>} */
const inputsOf = new Map();

/**
 * One inference of `batch` rows of zeros; resolves to the HTTP status (200 when served).
 * @param {string} httpUrl the engine's KServe HTTP base, e.g. http://127.0.0.1:8000
 * @param {string} model
 * @param {number} [batch]
 * @returns {Promise<number>}
 */
export async function inferZeros(httpUrl, model, batch = 1) {
  const key = `${httpUrl} ${model}`;
  if (!inputsOf.has(key)) {
    const meta = await fetch(`${httpUrl}/v2/models/${model}`);
    if (!meta.ok) throw new Error(`metadata of ${model}: ${meta.status} ${await meta.text()}`);
    inputsOf.set(key, (await meta.json()).inputs);
  }
  const inputs = inputsOf.get(key).map((i) => {
    const shape = i.shape.map((d) => (d < 0 ? batch : d));
    const n = shape.reduce((a, b) => a * b, 1);
    return { name: i.name, datatype: i.datatype, shape, data: new Array(n).fill(0) };
  });
  const r = await fetch(`${httpUrl}/v2/models/${model}/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ inputs }),
  });
  await r.arrayBuffer();
  return r.status;
}
