// The SDK's errors, timeouts and retries against the real API. Faults (a 503, a stalled answer) come from a real
// HTTP proxy on loopback in front of the API, which forwards everything else untouched.
import http from 'node:http';
import type net from 'node:net';
import { expect } from 'chai';
import {
  APIConnectionError,
  APIError,
  APITimeoutError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
  PublishableClient,
  SecretClient,
} from '@offerkit/sdk';
import { seededApp, type TestApp } from '../helpers/factories.js';
import { freePort, testEnv } from '../helpers/servers.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}
type Fault = (n: number, req: Seen) => { status?: number; delayMs?: number; body?: unknown } | undefined;

/** A proxy to the test API that answers with a fault when `fault` says so, and records every request. */
async function startProxy(fault: Fault) {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const r = { method: req.method!, url: req.url!, headers: req.headers };
      const f = fault(seen.length, r);
      seen.push(r);
      if (f?.delayMs) await new Promise((resolve) => setTimeout(resolve, f.delayMs));
      if (res.destroyed) return;
      if (f?.status) {
        res.writeHead(f.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(f.body ?? { error: `injected ${f.status}` }));
        return;
      }
      const headers = { ...req.headers } as Record<string, string>;
      delete headers.host;
      delete headers.connection;
      delete headers['content-length'];
      const up = await fetch(testEnv().baseUrl + req.url, {
        method: req.method,
        headers,
        body: chunks.length ? Buffer.concat(chunks) : undefined,
      });
      const body = Buffer.from(await up.arrayBuffer());
      res.writeHead(up.status, { 'content-type': up.headers.get('content-type') ?? 'text/plain' });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => expect.fail('expected the call to fail'),
    (e: unknown) => e,
  );
}

describe('SDK: errors, timeouts and retries', function () {
  this.timeout(60_000);
  let app: TestApp;
  let secret: SecretClient;
  before(async () => {
    ({ app } = await seededApp());
    secret = new SecretClient({ secretKey: app.api_key, appId: app.id, baseUrl: testEnv().baseUrl });
    await secret.accounts.create({ id: 'bob', plan: 'free' });
  });

  it('every non-2xx is an APIError with status, message and the parsed body, of the class of its status', async () => {
    const missing = await rejection(secret.accounts.get('nobody'));
    expect(missing).to.be.instanceOf(NotFoundError).and.instanceOf(APIError);
    expect(missing).to.include({ status: 404, message: 'Account nobody not found' });
    expect((missing as NotFoundError).body).to.deep.equal({ error: 'Account nobody not found' });

    const invalid = await rejection(secret.accounts.create({ id: '' }));
    expect(invalid).to.be.instanceOf(BadRequestError);
    expect(invalid).to.include({ status: 400 });
    expect((invalid as BadRequestError).message).to.match(/^id: /);

    const clash = await rejection(secret.accounts.create({ id: 'bob' }));
    expect(clash).to.be.instanceOf(ConflictError).and.include({ status: 409 });

    const wrongKey = new SecretClient({ secretKey: 'key_wrong', appId: app.id, baseUrl: testEnv().baseUrl });
    const denied = await rejection(wrongKey.apps.get());
    expect(denied).to.be.instanceOf(AuthenticationError).and.include({ status: 401, message: 'Unauthorized' });

    const pub = new PublishableClient({ publishableKey: app.public_key, appId: app.id, baseUrl: testEnv().baseUrl });
    const negative = await rejection(pub.usage.addAmount('bob', 'api_calls', { amount: -1 }));
    expect(negative).to.be.instanceOf(PermissionDeniedError).and.include({ status: 403 });
    expect((negative as APIError).body).to.deep.equal({ error: 'The publishable key cannot subtract usage' });
  });

  it('network failures and timeouts are their own errors, told apart from each other and from API errors', async () => {
    const closed = new SecretClient({
      secretKey: app.api_key,
      appId: app.id,
      baseUrl: `http://127.0.0.1:${await freePort()}`,
      maxRetries: 0,
    });
    const refused = await rejection(closed.apps.get());
    expect(refused).to.be.instanceOf(APIConnectionError);
    expect(refused).not.to.be.instanceOf(APITimeoutError);
    expect(refused).not.to.be.instanceOf(APIError);
    expect((refused as Error).message).to.match(/ECONNREFUSED/);

    const proxy = await startProxy(() => ({ delayMs: 1500 }));
    try {
      const slow = new SecretClient({ secretKey: app.api_key, appId: app.id, baseUrl: proxy.url, maxRetries: 0 });
      const started = Date.now();
      const timedOut = await rejection(slow.apps.get({ timeout: 300 }));
      expect(timedOut).to.be.instanceOf(APITimeoutError).and.instanceOf(APIConnectionError);
      expect((timedOut as APITimeoutError).timeoutMs).to.equal(300);
      expect(Date.now() - started).to.be.lessThan(1400);
      // With a longer timeout the same slow answer arrives.
      expect((await slow.apps.get({ timeout: 5000 })).id).to.equal(app.id);
    } finally {
      await proxy.close();
    }
  });

  it('GETs are retried after a 503; a retried POST carries the same Idempotency-Key; PATCH is sent once', async () => {
    let fail = 0;
    const proxy = await startProxy(() => (fail-- > 0 ? { status: 503 } : undefined));
    try {
      const client = new SecretClient({ secretKey: app.api_key, appId: app.id, baseUrl: proxy.url, maxRetries: 2 });
      fail = 2;
      expect((await client.accounts.get('bob')).id).to.equal('bob');
      expect(proxy.seen.map((s) => s.method)).to.deep.equal(['GET', 'GET', 'GET']);

      proxy.seen.length = 0;
      fail = 1;
      expect(await client.usage.add('bob', 'api_calls')).to.deep.equal({ entitlement: 'api_calls', count: 1 });
      expect(proxy.seen).to.have.length(2);
      const [k1, k2] = proxy.seen.map((s) => s.headers['idempotency-key']);
      expect(k1).to.match(/^sdk_/);
      expect(k2, 'the same key on the retry').to.equal(k1);
      proxy.seen.length = 0;
      await client.usage.add('bob', 'api_calls');
      expect(proxy.seen[0].headers['idempotency-key'], 'a new key per call').not.to.equal(k1);

      proxy.seen.length = 0;
      fail = 1;
      const once = await rejection(client.accounts.update('bob', { name: 'Bob' }));
      expect(once).to.be.instanceOf(InternalServerError).and.include({ status: 503, message: 'injected 503' });
      expect(proxy.seen, 'PATCH has no idempotency key: not retried').to.have.length(1);

      proxy.seen.length = 0;
      fail = 1;
      await client.accounts.update('bob', { name: 'Bob' }, { idempotencyKey: 'rename-bob-1' });
      expect(proxy.seen.map((s) => s.headers['idempotency-key'])).to.deep.equal(['rename-bob-1', 'rename-bob-1']);

      const noKeys = new SecretClient({
        secretKey: app.api_key,
        appId: app.id,
        baseUrl: proxy.url,
        idempotencyKeys: false,
      });
      proxy.seen.length = 0;
      fail = 1;
      expect(await rejection(noKeys.usage.add('bob', 'api_calls'))).to.include({ status: 503 });
      expect(proxy.seen, 'without a key a POST is sent once').to.have.length(1);
      expect(proxy.seen[0].headers['idempotency-key']).to.equal(undefined);
      expect((await secret.usage.get('bob', 'api_calls')).count, 'each call counted once').to.equal(2);

      proxy.seen.length = 0;
      fail = 5;
      expect(await rejection(client.accounts.get('bob', { maxRetries: 1 }))).to.include({ status: 503 });
      expect(proxy.seen, 'maxRetries per call').to.have.length(2);
    } finally {
      await proxy.close();
    }
  });

  it('a 503 saying the outcome is unknown is not retried: the caller sees it, not a later plainer answer', async () => {
    const unknown = {
      error: 'Service unavailable: the database stopped answering while it committed this change, ...',
      outcome: 'unknown',
    };
    const proxy = await startProxy(() => ({ status: 503, body: unknown }));
    try {
      const client = new SecretClient({ secretKey: app.api_key, appId: app.id, baseUrl: proxy.url, maxRetries: 2 });
      const err = await rejection(client.accounts.create({ id: 'maybe' }));
      expect(err).to.be.instanceOf(InternalServerError).and.include({ status: 503 });
      expect((err as InternalServerError).body).to.deep.equal(unknown);
      expect(proxy.seen, 'sent once, though POSTs with a key are retried').to.have.length(1);
    } finally {
      await proxy.close();
    }
  });

  it('a browser origin may send the Idempotency-Key header (CORS preflight)', async () => {
    const res = await fetch(`${testEnv().baseUrl}/apps/${app.id}/namespaces/bob/usage/api_calls/add`, {
      method: 'OPTIONS',
      headers: {
        Origin: 'https://shop.example',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization,idempotency-key',
      },
    });
    expect(res.status).to.equal(204);
    expect(res.headers.get('access-control-allow-headers')?.toLowerCase()).to.include('idempotency-key');
  });

  it('constructors check their credential', () => {
    const baseUrl = testEnv().baseUrl;
    expect(() => new SecretClient({ secretKey: app.public_key, appId: app.id, baseUrl })).to.throw(/secret key/);
    expect(() => new PublishableClient({ publishableKey: app.api_key, appId: app.id, baseUrl })).to.throw(/pub_/);
    expect(() => new SecretClient({ secretKey: app.api_key, appId: '', baseUrl })).to.throw(/appId is required/);
  });
});
