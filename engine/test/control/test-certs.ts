/** A throwaway CA, a server certificate for 127.0.0.1/localhost and a client certificate, made by openssl. */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface TestCerts {
  readonly dir: string;
  readonly caCert: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
  /** A second, unrelated key: does not match serverCert. */
  readonly otherKey: string;
}

const openssl = (dir: string, ...args: string[]): void => {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
};

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export function makeTestCerts(dir: string): TestCerts {
  openssl(
    dir,
    'req',
    '-x509',
    ...EC,
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '2',
    '-subj',
    '/CN=hloserve test CA',
  );
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  for (const [name, cn] of [
    ['server', 'localhost'],
    ['client', 'test client'],
  ] as const) {
    openssl(dir, 'req', ...EC, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`);
    openssl(
      dir,
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.crt`,
      '-days',
      '2',
      ...(name === 'server' ? ['-extfile', 'server.ext'] : []),
    );
  }
  openssl(dir, 'genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', 'other.key');
  return {
    dir,
    caCert: join(dir, 'ca.crt'),
    serverCert: join(dir, 'server.crt'),
    serverKey: join(dir, 'server.key'),
    clientCert: join(dir, 'client.crt'),
    clientKey: join(dir, 'client.key'),
    otherKey: join(dir, 'other.key'),
  };
}
