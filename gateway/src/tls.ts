/**
 * TLS on the gateway's public listeners (gRPC, HTTP, metrics, console): one certificate and key,
 * and optionally a CA whose client certificates are required. The hop to the workers stays
 * plaintext: under the supervisor they listen on loopback inside the same node.
 */
import { readFileSync } from 'node:fs';
import { createPrivateKey, X509Certificate } from 'node:crypto';

export interface GatewayTls {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** Clients must present a certificate this CA signed; null: none asked. */
  readonly clientCa: Buffer | null;
  /** For the settings API: where the certificate came from, its subject and expiry. */
  readonly certFile: string | null;
  readonly subject: string;
  readonly validTo: string;
}

/** Options shared by https.createServer and the gRPC listener's tls.createServer. */
export function secureOptions(tls: GatewayTls): {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer;
  requestCert: boolean;
  rejectUnauthorized: boolean;
} {
  return tls.clientCa === null
    ? { cert: tls.cert, key: tls.key, requestCert: false, rejectUnauthorized: false }
    : { cert: tls.cert, key: tls.key, ca: tls.clientCa, requestCert: true, rejectUnauthorized: true };
}

/** The `tls` object of GET /api/v1/settings, for the listener the caller reached. */
export function tlsSettingsView(tls: GatewayTls | null): {
  enabled: boolean;
  certFile: string | null;
  subject: string | null;
  validTo: string | null;
  clientCertificates: boolean;
} {
  if (!tls) return { enabled: false, certFile: null, subject: null, validTo: null, clientCertificates: false };
  return {
    enabled: true,
    certFile: tls.certFile,
    subject: tls.subject,
    validTo: tls.validTo,
    clientCertificates: tls.clientCa !== null,
  };
}

function read(file: string, flag: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new Error(
      `${flag} ${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
}

/**
 * The standalone gateway's --tls-cert/--tls-key/--tls-client-ca, checked before it listens: a
 * certificate that does not parse or a key that does not match stops the start naming the file.
 */
export function gatewayTlsFromFiles(certFile: string, keyFile: string, clientCaFile: string | null): GatewayTls {
  const cert = read(certFile, '--tls-cert');
  const key = read(keyFile, '--tls-key');
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (err) {
    throw new Error(`--tls-cert ${certFile}: not a certificate (${(err as Error).message})`);
  }
  let ok: boolean;
  try {
    ok = x509.checkPrivateKey(createPrivateKey(key));
  } catch (err) {
    throw new Error(`--tls-key ${keyFile}: not a private key (${(err as Error).message})`);
  }
  if (!ok) throw new Error(`--tls-key ${keyFile}: does not match the certificate in ${certFile}`);
  let clientCa: Buffer | null = null;
  if (clientCaFile !== null) {
    clientCa = read(clientCaFile, '--tls-client-ca');
    try {
      new X509Certificate(clientCa);
    } catch (err) {
      throw new Error(`--tls-client-ca ${clientCaFile}: not a certificate (${(err as Error).message})`);
    }
  }
  return { cert, key, clientCa, certFile, subject: x509.subject, validTo: x509.validTo };
}
