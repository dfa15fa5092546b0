/**
 * TLS with several workers: the gateway terminates it on the public ports with the certificate of
 * `global.endpoints.tls`, and the workers behind it listen in plaintext on loopback, so the hop
 * gateway -> worker never leaves the node. A worker learns it runs behind such a gateway from the
 * environment the supervisor starts it with.
 */
import { ServeError } from '@hloserve/common/errors';
import type { GatewayTls } from '@hloserve/gateway';
import type { NodeConfig, TlsConfig, WorkerSettings } from '../config/types.js';
import { loadTlsMaterial } from '../tls/tls-material.js';

/** Set by the supervisor on its workers when its gateway serves TLS. */
export const TLS_AT_GATEWAY_ENV = 'HLOSERVE_TLS_AT_GATEWAY';

const sameTls = (a: TlsConfig | null, b: TlsConfig | null) =>
  a === b ||
  (a !== null &&
    b !== null &&
    a.certFile === b.certFile &&
    a.keyFile === b.keyFile &&
    a.clientCaFile === b.clientCaFile);

/**
 * The gateway's TLS for this node.yaml, its files read and checked (before any worker starts);
 * null without `endpoints.tls`. A worker entry with a TLS block of its own is refused: behind the
 * gateway no worker serves clients, so only the node's (global) block can mean anything.
 */
export function gatewayTlsFor(config: NodeConfig): GatewayTls | null {
  const tls = config.global.endpoints.tls;
  const odd = config.workers.find((w) => !sameTls(w.settings.endpoints.tls, tls));
  if (odd)
    throw new ServeError(
      'HLO_ERR_CONFIG_INVALID',
      `workers.${odd.name}.endpoints.tls (${config.file ?? 'node.yaml'}): with several workers the gateway serves TLS for the node; set endpoints.tls under global only`,
    );
  if (tls === null) return null;
  const m = loadTlsMaterial(tls);
  return {
    cert: m.cert,
    key: m.key,
    clientCa: m.clientCa,
    certFile: tls.certFile,
    subject: m.subject,
    validTo: m.validTo,
  };
}

/** A supervised worker behind a TLS gateway: plaintext, loopback only. Others are unchanged. */
export function settingsBehindGateway(settings: WorkerSettings, env: NodeJS.ProcessEnv = process.env): WorkerSettings {
  if (env['HLOSERVE_SUPERVISED'] !== '1' || env[TLS_AT_GATEWAY_ENV] !== '1') return settings;
  return { ...settings, endpoints: { ...settings.endpoints, host: '127.0.0.1', tls: null } };
}
