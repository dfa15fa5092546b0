import { describe, expect, test } from 'vitest';
import { tlsSummary } from './tls-summary.js';

const on = {
  enabled: true,
  certFile: '/etc/hloserve/server.crt',
  subject: 'CN=localhost\nO=hloserve',
  validTo: 'Nov 26 01:20:00 2026 GMT',
  clientCertificates: false,
};

describe('the TLS line of the Settings screen', () => {
  test('says plain HTTP when the server serves no TLS', () => {
    expect(
      tlsSummary({ enabled: false, certFile: null, subject: null, validTo: null, clientCertificates: false }),
    ).toBe('plain HTTP (no TLS)');
  });

  test('names the subject, the expiry and whether client certificates are asked', () => {
    const now = Date.parse('2026-11-24T00:00:00Z');
    expect(tlsSummary(on, now)).toBe(
      'TLS · CN=localhost, O=hloserve · valid until Nov 26 01:20:00 2026 GMT · no client certificates',
    );
    expect(tlsSummary({ ...on, clientCertificates: true }, now)).toMatch(/client certificates required$/);
  });

  test('an expired certificate reads as expired', () => {
    expect(tlsSummary(on, Date.parse('2027-01-01T00:00:00Z'))).toContain('expired Nov 26 01:20:00 2026 GMT');
  });
});
