import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { examplesDir } from './server-process.js';

/**
 * Writes a node.yaml in `dir` that serves the example mlp on loopback with TLS from `dir`'s
 * server.crt and `<key>.key` (made by common's selfSignedCertificate), its compile cache in `dir`.
 * Returns its path; a later `--config` wins over the helper's examples/node.yaml.
 */
export function writeTlsNodeYaml(dir: string, key = 'server'): string {
  const file = join(dir, `node-${key}.yaml`);
  writeFileSync(
    file,
    [
      `model_repo: ${examplesDir}`,
      'global:',
      `  cache_dir: ${join(dir, 'cache')}`,
      '  models_include: [mlp]',
      '  endpoints:',
      '    host: 127.0.0.1',
      '    tls:',
      '      cert: server.crt',
      `      key: ${key}.key`,
      '',
    ].join('\n'),
  );
  return file;
}
