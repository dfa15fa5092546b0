/**
 * A throwaway self-signed certificate for tests that need TLS on 127.0.0.1: `<name>.key` and
 * `<name>.crt` in `dir`, made by openssl (P-256, two days). Kept here so the gateway's and the
 * end-to-end tests make their certificates one way.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export interface SelfSignedFiles {
  readonly cert: string;
  readonly key: string;
}

export function selfSignedCertificate(dir: string, name: string, commonName = 'localhost'): SelfSignedFiles {
  const key = join(dir, `${name}.key`);
  const cert = join(dir, `${name}.crt`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      `/CN=${commonName}`,
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: 'pipe' },
  );
  return { cert, key };
}
