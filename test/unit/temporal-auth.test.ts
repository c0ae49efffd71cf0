import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { loadConfig } from '../../src/config.js';
import { temporalAuth } from '../../src/temporal/client.js';
import { tempDir } from '../helpers/servers.js';

describe('Temporal TLS and API key settings (Temporal Cloud)', () => {
  const dir = tempDir('offerkit-tls-');
  const cert = path.join(dir, 'tls.crt');
  const key = path.join(dir, 'tls.key');
  const ca = path.join(dir, 'ca.crt');
  fs.writeFileSync(cert, '-----BEGIN CERTIFICATE-----\nclient\n-----END CERTIFICATE-----\n');
  fs.writeFileSync(key, '-----BEGIN PRIVATE KEY-----\nkey\n-----END PRIVATE KEY-----\n');
  fs.writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n');

  it('none set: a plain connection (a local cluster or the dev server)', () => {
    expect(temporalAuth(loadConfig({}))).to.deep.equal({});
  });

  it('mutual TLS: the client certificate and key read from their files, with a CA and server name when given', () => {
    const auth = temporalAuth(
      loadConfig({
        TEMPORAL_TLS_CERT: cert,
        TEMPORAL_TLS_KEY: key,
        TEMPORAL_TLS_CA: ca,
        TEMPORAL_TLS_SERVER_NAME: 'ns.tmprl.cloud',
      }),
    );
    const tls = auth.tls as { clientCertPair: { crt: Buffer; key: Buffer }; serverRootCACertificate: Buffer };
    expect(tls.clientCertPair.crt.toString()).to.equal(fs.readFileSync(cert, 'utf8'));
    expect(tls.clientCertPair.key.toString()).to.equal(fs.readFileSync(key, 'utf8'));
    expect(tls.serverRootCACertificate.toString()).to.equal(fs.readFileSync(ca, 'utf8'));
    expect(auth.tls).to.include({ serverNameOverride: 'ns.tmprl.cloud' });
    expect(auth).to.not.have.property('apiKey');
  });

  it('an API key alone: TLS with the server verified by public CAs, and the key', () => {
    expect(temporalAuth(loadConfig({ TEMPORAL_API_KEY: 'tmprl_key' }))).to.deep.equal({ tls: {}, apiKey: 'tmprl_key' });
  });

  it('a certificate without its key (or the reverse) stops the start; an unreadable file is named', () => {
    expect(() => loadConfig({ TEMPORAL_TLS_CERT: cert })).to.throw(/TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY together/);
    expect(() => loadConfig({ TEMPORAL_TLS_KEY: key })).to.throw(/TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY together/);
    expect(() =>
      temporalAuth(loadConfig({ TEMPORAL_TLS_CERT: path.join(dir, 'missing.crt'), TEMPORAL_TLS_KEY: key })),
    ).to.throw(/TEMPORAL_TLS_CERT \(.*missing\.crt\) cannot be read/);
  });
});
