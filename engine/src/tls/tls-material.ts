/**
 * The certificate and key every listener of a worker serves TLS with (`endpoints.tls` in
 * node.yaml), read once at start and checked before any model compiles: a missing file, a file
 * that is not PEM, or a key that does not match the certificate stops the start with an error
 * naming the file, instead of a listener that fails its first handshake.
 */
import { readFileSync } from 'node:fs';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import { ServeError } from '@hloserve/common/errors';
import type { TlsConfig } from '../config/types.js';

export interface TlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** Clients must present a certificate this CA signed; null: no client certificates asked. */
  readonly clientCa: Buffer | null;
  readonly config: TlsConfig;
  /** The leaf certificate's subject and expiry, for the settings API. */
  readonly subject: string;
  readonly validTo: string;
}

function fail(file: string, key: string, why: string): ServeError {
  return new ServeError('HLO_ERR_CONFIG_INVALID', `endpoints.tls.${key} (${file}): ${why}`);
}

function readPem(file: string, key: string, marker: RegExp): Buffer {
  let data: Buffer;
  try {
    data = readFileSync(file);
  } catch (err) {
    throw fail(file, key, `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (!marker.test(data.toString('latin1'))) throw fail(file, key, 'not a PEM file of the expected kind');
  return data;
}

/** Reads and checks the files `tls` names; throws HLO_ERR_CONFIG_INVALID naming the file. */
export function loadTlsMaterial(tls: TlsConfig): TlsMaterial {
  const cert = readPem(tls.certFile, 'cert', /-----BEGIN CERTIFICATE-----/);
  const key = readPem(tls.keyFile, 'key', /-----BEGIN [A-Z ]*PRIVATE KEY-----/);
  const clientCa =
    tls.clientCaFile === null ? null : readPem(tls.clientCaFile, 'client_ca', /-----BEGIN CERTIFICATE-----/);
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (err) {
    throw fail(tls.certFile, 'cert', `not a valid certificate (${(err as Error).message})`);
  }
  try {
    createPrivateKey(key);
  } catch (err) {
    throw fail(tls.keyFile, 'key', `not a valid private key (${(err as Error).message})`);
  }
  if (!x509.checkPrivateKey(createPrivateKey(key)))
    throw fail(tls.keyFile, 'key', `does not match the certificate in ${tls.certFile}`);
  if (clientCa !== null) {
    try {
      createSecureContext({ ca: clientCa });
    } catch (err) {
      throw fail(tls.clientCaFile!, 'client_ca', `not a valid CA certificate (${(err as Error).message})`);
    }
  }
  return { cert, key, clientCa, config: tls, subject: x509.subject, validTo: x509.validTo };
}

/** Options for node:https / Fastify's `https`. */
export function httpsOptions(m: TlsMaterial): {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer;
  requestCert: boolean;
  rejectUnauthorized: boolean;
} {
  return m.clientCa === null
    ? { cert: m.cert, key: m.key, requestCert: false, rejectUnauthorized: false }
    : { cert: m.cert, key: m.key, ca: m.clientCa, requestCert: true, rejectUnauthorized: true };
}
