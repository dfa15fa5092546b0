// `--envs 'name:K=V+K=V;name2:K=V'`: named variants of a bench's child environment, run in
// alternating rounds so that they share the machine's load (bench/lifecycle.mjs, bench/reload-waits.mjs).
/**
 * @param {string} text
 * @returns {{ name: string, env: Record<string, string> }[]}
 */
export function parseEnvVariants(text) {
  return text
    .split(';')
    .filter((e) => e !== '')
    .map((e) => {
      const [name, list = ''] = e.split(':');
      return {
        name,
        env: Object.fromEntries(
          list
            .split('+')
            .filter((kv) => kv !== '')
            .map((kv) => kv.split('=')),
        ),
      };
    });
}
