import type { SettingsTls } from '../api/types.js';

/** One line for the Settings screen: what the server says it serves, never what the page's URL suggests. */
export function tlsSummary(tls: SettingsTls, now = Date.now()): string {
  if (!tls.enabled) return 'plain HTTP (no TLS)';
  const parts = ['TLS'];
  // X509 subjects come as "CN=host\nO=org"; one line reads better.
  if (tls.subject) parts.push(tls.subject.split('\n').join(', '));
  if (tls.validTo) {
    const until = Date.parse(tls.validTo);
    parts.push(Number.isFinite(until) && until < now ? `expired ${tls.validTo}` : `valid until ${tls.validTo}`);
  }
  parts.push(tls.clientCertificates ? 'client certificates required' : 'no client certificates');
  return parts.join(' · ');
}
