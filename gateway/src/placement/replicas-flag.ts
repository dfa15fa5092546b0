/**
 * `--replicas resnet=2,mlp=all`: how many workers each named model is placed on (all = every
 * worker). One parser for the standalone gateway and the supervisor's, so both take the same text.
 */
export function parseReplicas(spec: string | undefined): Map<string, number> {
  const out = new Map<string, number>();
  for (const part of (spec ?? '').split(',').filter(Boolean)) {
    const [name, n] = part.split('=');
    const count = n === 'all' ? Infinity : Number(n);
    if (!name || !(count >= 1)) throw new Error(`--replicas expects model=count|all[,...], got '${part}'`);
    out.set(name, count);
  }
  return out;
}
