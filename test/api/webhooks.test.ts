import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../../src/config.js';
import { sql } from '../../src/db/sql.js';
import { routes } from '../../src/routes.js';
import { sendSigned } from '../../src/webhooks/sender.js';
import { PRIVATE_URLS_HINT } from '../../src/webhooks/endpoints.service.js';
import { fanOut } from '../../src/webhooks/fanout.js';
import { recordEvent } from '../../src/events/events.service.js';
import { enqueueTemporal } from '../../src/temporal/outbox.js';
import { DEFAULT_RETRY_SCHEDULE_MS, webhookDeliveryDef, type WebhookDeliveryState } from '../../workflows/shared.js';
import { createAccount, createTestApp, seedCatalog, type TestApp } from '../helpers/factories.js';
import { call, del, get, patch, post } from '../helpers/http.js';
import { mountRoutes } from '../helpers/mount.js';
import { startReceiver } from '../helpers/receiver.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

function verify(secret: string, r: { headers: Record<string, unknown>; body: string }) {
  return new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as Record<string, unknown>;
}

describe('webhooks', function () {
  this.timeout(60_000);
  let app: TestApp;
  let base: string;
  const receivers: { close(): Promise<void> }[] = [];
  const receiver = async (...args: Parameters<typeof startReceiver>) => {
    const r = await startReceiver(...args);
    receivers.push(r);
    return r;
  };
  beforeEach(async () => {
    app = await createTestApp();
    base = `/apps/${app.id}`;
  });
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });

  const endpoint = async (url: string, events: string[] = ['*'], extra: Record<string, unknown> = {}) => {
    const res = await post(`${base}/webhooks`, app.api_key, { url, events, ...extra });
    expect(res.status, res.text).to.equal(201);
    return res.body as { id: string; secret: string };
  };
  const deliveries = async (endpointId: string) =>
    (await get(`${base}/webhooks/${endpointId}/deliveries`, app.api_key)).body.data as Record<string, any>[];
  const settled = (endpointId: string, n = 1) =>
    eventually(async () => {
      const list = await deliveries(endpointId);
      return list.length >= n && list.every((d) => d.status !== 'pending') ? list : undefined;
    });

  describe('endpoints', () => {
    it('create (secret once more on single read), list with stats and no secret, update, delete', async () => {
      const res = await post(`${base}/webhooks`, app.api_key, {
        url: 'https://hooks.example.com/x',
        events: ['plan.created', 'account.created'],
        description: 'CRM sync',
      });
      expect(res.status).to.equal(201);
      expect(res.body).to.deep.include({
        app_id: app.id,
        url: 'https://hooks.example.com/x',
        description: 'CRM sync',
        enabled: true,
        source: 'custom',
        disabled_reason: null,
      });
      expect(res.body.id).to.match(/^whk_/);
      expect(res.body.secret).to.match(/^whsec_[A-Za-z0-9+/]+=*$/);
      expect(Buffer.from(res.body.secret.slice(6), 'base64')).to.have.length(24);
      expect(res.body.stats).to.deep.equal({
        total: 0,
        succeeded: 0,
        failed: 0,
        pending: 0,
        last_delivery_at: null,
        last_status: null,
        last_response_status: null,
      });
      const list = (await get(`${base}/webhooks`, app.api_key)).body;
      expect(list).to.have.length(1);
      expect(list[0]).to.not.have.property('secret');
      expect((await get(`${base}/webhooks/${res.body.id}`, app.api_key)).body.secret).to.equal(res.body.secret);
      const upd = await patch(`${base}/webhooks/${res.body.id}`, app.api_key, { events: ['*'], description: null });
      expect(upd.body).to.deep.include({ events: ['*'], description: null });
      expect((await del(`${base}/webhooks/${res.body.id}`, app.api_key)).status).to.equal(200);
      expect((await get(`${base}/webhooks/${res.body.id}`, app.api_key)).status).to.equal(404);
    });

    it('400 for an unknown event type or none; 409 past 25 endpoints', async () => {
      const bad = await post(`${base}/webhooks`, app.api_key, {
        url: 'https://hooks.example.com',
        events: ['plan.created', 'plan.exploded'],
      });
      expect(bad.status).to.equal(400);
      expect(bad.body.error).to.equal('events.1: unknown event type "plan.exploded"');
      expect(
        (await post(`${base}/webhooks`, app.api_key, { url: 'https://hooks.example.com', events: [] })).status,
      ).to.equal(400);
      const results = await Promise.all(
        Array.from({ length: 27 }, (_, i) =>
          post(`${base}/webhooks`, app.api_key, { url: `https://hooks.example.com/${i}`, events: ['*'] }),
        ),
      );
      expect(results.filter((r) => r.status === 201)).to.have.length(25);
      const refused = results.filter((r) => r.status === 409);
      expect(refused).to.have.length(2);
      expect(refused[0].body.error).to.equal('An app can have at most 25 webhook endpoints');
    });

    it('rejects private, local and link-local URLs, and hosts resolving to them, unless allowed', async () => {
      const deps = testEnv().deps;
      const resolve = async (host: string) =>
        ({
          'public.example': ['93.184.216.34'],
          'sneaky.example': ['93.184.216.34', '10.1.2.3'],
          'metadata.example': ['169.254.169.254'],
        })[host] ?? [];
      const strict = await mountRoutes(routes, {
        config: { ...deps.config, WEBHOOKS_ALLOW_PRIVATE_URLS: false },
        resolve,
      });
      try {
        const create = (url: string) =>
          call('POST', `${base}/webhooks`, { base: strict.base, token: app.api_key, body: { url, events: ['*'] } });
        for (const [url, reason] of [
          ['http://127.0.0.1/x', 'url: must be a public address (127.0.0.1 is not)'],
          ['http://10.0.0.5/x', 'url: must be a public address (10.0.0.5 is not)'],
          ['http://192.168.1.1/x', 'url: must be a public address (192.168.1.1 is not)'],
          ['http://169.254.169.254/latest', 'url: must be a public address (169.254.169.254 is not)'],
          ['http://[::1]/x', 'url: must be a public address (::1 is not)'],
          ['http://[::ffff:127.0.0.1]/x', 'url: must be a public address (::ffff:7f00:1 is not)'],
          ['https://sneaky.example/x', 'url: must be a public address (sneaky.example resolves to 10.1.2.3)'],
          [
            'https://metadata.example/x',
            'url: must be a public address (metadata.example resolves to 169.254.169.254)',
          ],
          ['ftp://public.example/x', 'url: must be an http or https URL'],
          ['https://nowhere.example/x', 'url: must be a public address (nowhere.example resolves to nothing)'],
        ]) {
          const res = await create(url);
          expect(res.status, url).to.equal(400);
          expect(res.body.error, url).to.equal(reason.includes('public address') ? reason + PRIVATE_URLS_HINT : reason);
        }
        expect((await create('https://public.example/hook')).status).to.equal(201);
        // The system resolver: "localhost" is a host name that resolves to 127.0.0.1.
        const real = await mountRoutes(routes, { config: { ...deps.config, WEBHOOKS_ALLOW_PRIVATE_URLS: false } });
        try {
          const res = await call('POST', `${base}/webhooks`, {
            base: real.base,
            token: app.api_key,
            body: { url: 'http://localhost:8080/x', events: ['*'] },
          });
          expect(res.status).to.equal(400);
          expect(res.body.error).to.match(
            /^url: must be a public address \(localhost resolves to (127\.0\.0\.1|::1)\); to deliver to a local/,
          );
        } finally {
          await real.close();
        }
      } finally {
        await strict.close();
      }
    });

    it('refuses at send time a host that now resolves to a private address (DNS rebinding)', async () => {
      const r = await receiver();
      // Saved while the name resolved to a public address; at send time it resolves to loopback.
      const resolve = async () => ['127.0.0.1'];
      const result = await sendSigned({
        url: `http://rebind.example:${r.port}/hooks`,
        secret: 'whsec_' + Buffer.from('k'.repeat(24)).toString('base64'),
        eventId: 'evt_x',
        body: '{}',
        allowPrivate: false,
        resolve,
      });
      expect(result.ok).to.equal(false);
      expect(result.error).to.match(/^Blocked: rebind\.example resolves to a non-public address \(127\.0\.0\.1\)/);
      expect(r.received).to.have.length(0);
      const literal = await sendSigned({
        url: `http://127.0.0.1:${r.port}/hooks`,
        secret: 'whsec_' + Buffer.from('k'.repeat(24)).toString('base64'),
        eventId: 'evt_x',
        body: '{}',
        allowPrivate: false,
        resolve,
      });
      expect(literal.error).to.equal('Blocked: 127.0.0.1 is not a public address');
      expect(r.received).to.have.length(0);
    });
  });

  describe('deliveries (Temporal workflows, real HTTP)', () => {
    it('a 2xx: signed per Standard Webhooks, the event envelope as body, a findable workflow', async () => {
      const r = await receiver();
      const ep = await endpoint(r.url, ['plan.created']);
      await post(`${base}/plans`, app.api_key, { id: 'pro', name: 'Pro' });
      await post(`${base}/entitlements`, app.api_key, { id: 'x', type: 'usage', name: 'X' }); // not subscribed
      const [req] = await r.waitFor(1);
      const payload = verify(ep.secret, req);
      expect(payload).to.deep.include({ type: 'plan.created', app_id: app.id });
      expect((payload.data as { object: { id: string } }).object.id).to.equal('pro');
      expect(req.headers['webhook-id']).to.equal(payload.id);
      expect(req.headers['user-agent']).to.equal('Offerkit-Webhooks/1.0');
      expect(req.headers['content-type']).to.equal('application/json');
      expect(req.headers['webhook-signature']).to.match(/^v1,[A-Za-z0-9+/]+=*$/);
      expect(Math.abs(Number(req.headers['webhook-timestamp']) - Date.now() / 1000)).to.be.below(30);
      expect(() => verify(ep.secret, { ...req, body: req.body.replace('pro', 'pwn') })).to.throw();

      const [d] = await settled(ep.id);
      expect(d).to.deep.include({
        status: 'succeeded',
        attempts: 1,
        response_status: 200,
        response_body: 'ok',
        error: null,
        test: false,
        event_type: 'plan.created',
        event_id: payload.id,
      });
      expect(d.payload).to.deep.equal(payload);
      const handle = testEnv().deps.temporal.client.workflow.getHandle(d.id);
      await handle.result();
      const desc = await handle.describe();
      const sa = Object.fromEntries(desc.typedSearchAttributes.getAll().map((p) => [p.key.name, p.value]));
      expect(sa).to.deep.include({
        AppId: app.id,
        EndpointId: ep.id,
        EventType: 'plan.created',
        DeliveryStatus: 'succeeded',
      });
      expect(await desc.staticSummary()).to.equal(`Webhook plan.created to ${r.url}`);
      const ev = (await get(`${base}/events?type=plan.created`, app.api_key)).body.data;
      expect(ev[0].id).to.equal(payload.id);
      const stats = (await get(`${base}/webhooks/${ep.id}`, app.api_key)).body.stats;
      expect(stats).to.deep.include({
        total: 1,
        succeeded: 1,
        failed: 0,
        pending: 0,
        last_status: 'succeeded',
        last_response_status: 200,
      });
    });

    it('retries on the schedule after 500s, with the same webhook-id, until a 2xx', async () => {
      const r = await receiver((n) => (n < 2 ? { status: 500, body: 'boom' } : { status: 204 }));
      const ep = await endpoint(r.url);
      await post(`${base}/plans`, app.api_key, { id: 'pro', name: 'Pro' });
      const got = await r.waitFor(3);
      expect(new Set(got.map((x) => x.headers['webhook-id'])).size).to.equal(1);
      for (const x of got) verify(ep.secret, x);
      expect(got[1].at - got[0].at).to.be.at.least(250);
      const [d] = await settled(ep.id);
      expect(d).to.deep.include({ status: 'succeeded', attempts: 3, response_status: 204 });
    });

    it('fails after attempt 7, keeping the last error and the first 1,024 characters of the answer', async () => {
      const r = await receiver(() => ({ status: 503, body: 'x'.repeat(5000) }));
      const ep = await endpoint(r.url);
      await post(`${base}/plans`, app.api_key, { id: 'pro', name: 'Pro' });
      const [d] = await settled(ep.id);
      expect(r.received).to.have.length(7);
      expect(d).to.deep.include({
        status: 'failed',
        attempts: 7,
        response_status: 503,
        error: 'HTTP 503',
        next_attempt_at: null,
      });
      expect(d.response_body).to.have.length(1024);
      const state = (await testEnv().deps.temporal.client.workflow.getHandle(d.id).result()) as WebhookDeliveryState;
      expect(state).to.deep.include({ status: 'failed', attempts: 7, maxAttempts: 7 });
    });

    it('a redirect is a failure and is not followed', async () => {
      const target = await receiver();
      const r = await receiver((n) => (n === 0 ? { status: 302, headers: { location: target.url } } : { status: 200 }));
      const ep = await endpoint(r.url);
      await post(`${base}/plans`, app.api_key, { id: 'pro', name: 'Pro' });
      await settled(ep.id);
      const [d] = await deliveries(ep.id);
      expect(d).to.deep.include({ status: 'succeeded', attempts: 2 });
      expect(target.received).to.have.length(0);
    });

    it('a timeout (no answer within 10 s) is a failure; the next attempt goes out', async function () {
      this.timeout(60_000);
      const r = await receiver((n) => (n === 0 ? { status: 200, delayMs: 12_000 } : { status: 200 }));
      const ep = await endpoint(r.url);
      await post(`${base}/plans`, app.api_key, { id: 'pro', name: 'Pro' });
      const got = await r.waitFor(2, 30_000);
      expect(got[1].at - got[0].at).to.be.within(9_500, 12_000);
      const [d] = await settled(ep.id);
      expect(d).to.deep.include({ status: 'succeeded', attempts: 2 });
    });

    it('410 fails the delivery and disables the endpoint; its other pending deliveries fail too', async () => {
      const r = await receiver((n) => (n === 0 ? { status: 410 } : { status: 500 }));
      const ep = await endpoint(r.url);
      testEnv().deps.config.WEBHOOK_RETRY_SCHEDULE_MS = [60_000, 60_000, 60_000, 60_000, 60_000, 60_000];
      try {
        await post(`${base}/plans`, app.api_key, { id: 'a', name: 'A' });
        await r.waitFor(1);
        await settled(ep.id);
      } finally {
        testEnv().deps.config.WEBHOOK_RETRY_SCHEDULE_MS = loadConfig({
          WEBHOOK_RETRY_SCHEDULE_MS: '300,300,300,300,300,300',
        }).WEBHOOK_RETRY_SCHEDULE_MS;
      }
      const [d] = await deliveries(ep.id);
      expect(d).to.deep.include({
        status: 'failed',
        attempts: 1,
        response_status: 410,
        error: 'Endpoint returned 410 Gone',
      });
      const read = (await get(`${base}/webhooks/${ep.id}`, app.api_key)).body;
      expect(read).to.deep.include({ enabled: false, disabled_reason: 'Endpoint returned 410 Gone' });
      // A disabled endpoint receives no new events.
      await post(`${base}/plans`, app.api_key, { id: 'b', name: 'B' });
      await new Promise((res) => setTimeout(res, 500));
      expect(r.received).to.have.length(1);
      expect(await deliveries(ep.id)).to.have.length(1);
      // Enabling clears the reason.
      expect((await patch(`${base}/webhooks/${ep.id}`, app.api_key, { enabled: true })).body).to.deep.include({
        enabled: true,
        disabled_reason: null,
      });
    });

    it('disabling an endpoint while a delivery waits for its retry ends it failed with "Endpoint disabled", without sending', async () => {
      const r = await receiver(() => ({ status: 500 }));
      const ep = await endpoint(r.url);
      testEnv().deps.config.WEBHOOK_RETRY_SCHEDULE_MS = [
        3_600_000, 3_600_000, 3_600_000, 3_600_000, 3_600_000, 3_600_000,
      ];
      try {
        await post(`${base}/plans`, app.api_key, { id: 'pro', name: 'Pro' });
        await r.waitFor(1);
      } finally {
        testEnv().deps.config.WEBHOOK_RETRY_SCHEDULE_MS = [300, 300, 300, 300, 300, 300];
      }
      const waiting = await eventually(async () => {
        const [d] = await deliveries(ep.id);
        return d?.attempts === 1 && d.next_attempt_at ? d : undefined;
      });
      expect(waiting.status).to.equal('pending');
      expect(Date.parse(waiting.next_attempt_at) - Date.now()).to.be.above(3_000_000);
      const handle = testEnv().deps.temporal.client.workflow.getHandle(waiting.id);
      expect((await handle.query(webhookDeliveryDef.queries.state)).nextAttemptAt).to.not.equal(null);
      await patch(`${base}/webhooks/${ep.id}`, app.api_key, { enabled: false });
      const state = (await handle.result()) as WebhookDeliveryState;
      expect(state.status).to.equal('failed');
      const [d] = await deliveries(ep.id);
      expect(d).to.deep.include({ status: 'failed', attempts: 1, error: 'Endpoint disabled', next_attempt_at: null });
      expect(r.received).to.have.length(1);
    });

    it('manual retry: one attempt returning its result; to a disabled endpoint it fails at once and sends nothing', async () => {
      let healthy = false;
      const r = await receiver(() => (healthy ? { status: 200, body: 'fine now' } : { status: 500 }));
      const ep = await endpoint(r.url);
      await post(`${base}/plans`, app.api_key, { id: 'pro', name: 'Pro' });
      const [failed] = await settled(ep.id);
      expect(failed.status).to.equal('failed');
      const sentBefore = r.received.length;
      healthy = true;
      const retried = await post(`${base}/webhooks/${ep.id}/deliveries/${failed.id}/retry`, app.api_key);
      expect(retried.status).to.equal(200);
      expect(retried.body).to.deep.include({
        id: failed.id,
        status: 'succeeded',
        attempts: 8,
        response_status: 200,
        response_body: 'fine now',
      });
      expect(r.received).to.have.length(sentBefore + 1);
      expect(r.received.at(-1)!.headers['webhook-id']).to.equal(failed.event_id);

      await patch(`${base}/webhooks/${ep.id}`, app.api_key, { enabled: false });
      const refused = await post(`${base}/webhooks/${ep.id}/deliveries/${failed.id}/retry`, app.api_key);
      expect(refused.body).to.deep.include({ status: 'failed', attempts: 9, error: 'Endpoint disabled' });
      expect(r.received).to.have.length(sentBefore + 1);
      expect((await post(`${base}/webhooks/${ep.id}/deliveries/whd_nope/retry`, app.api_key)).status).to.equal(404);
    });

    it('test send: one attempt even to a disabled endpoint, payload marked test, not in the log or stats', async () => {
      const r = await receiver();
      const ep = await endpoint(r.url, ['plan.updated', 'plan.created'], { enabled: false });
      const res = await post(`${base}/webhooks/${ep.id}/test`, app.api_key, {});
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.include({ status: 'succeeded', attempts: 1, test: true, event_type: 'plan.updated' });
      const payload = verify(ep.secret, r.received[0]);
      expect(payload).to.deep.include({ type: 'plan.updated', test: true, app_id: app.id });
      expect(payload.data).to.have.property('previous');
      const typed = await post(`${base}/webhooks/${ep.id}/test`, app.api_key, { type: 'usage.limit_reached' });
      expect(typed.body.payload.data.object).to.have.keys(
        'account_id',
        'entitlement_id',
        'entitlement_name',
        'entity',
        'usage',
        'max',
        'left',
        'percent',
      );
      expect((await post(`${base}/webhooks/${ep.id}/test`, app.api_key, { type: 'nope' })).status).to.equal(400);
      expect((await get(`${base}/events`, app.api_key)).body.data).to.deep.equal([]);
      expect((await get(`${base}/webhooks/${ep.id}`, app.api_key)).body.stats.total).to.equal(0);
      const star = await endpoint(r.url, ['*']);
      expect((await post(`${base}/webhooks/${star.id}/test`, app.api_key, {})).body.event_type).to.equal(
        'account.created',
      );
    });

    it('a regenerated secret signs every later attempt; the old one no longer verifies', async () => {
      const r = await receiver();
      const ep = await endpoint(r.url, ['plan.created']);
      const regen = await post(`${base}/webhooks/${ep.id}/secret/regenerate`, app.api_key);
      expect(regen.status).to.equal(200);
      expect(regen.body.secret)
        .to.match(/^whsec_/)
        .and.not.equal(ep.secret);
      await post(`${base}/plans`, app.api_key, { id: 'pro', name: 'Pro' });
      const [req] = await r.waitFor(1);
      expect(verify(regen.body.secret, req)).to.deep.include({ type: 'plan.created' });
      expect(() => verify(ep.secret, req)).to.throw();
    });

    it('many deliveries go out in parallel', async () => {
      const r = await receiver(() => ({ status: 200, delayMs: 1000 }));
      const ep = await endpoint(r.url);
      const started = Date.now();
      await Promise.all(
        Array.from({ length: 10 }, (_, i) => post(`${base}/plans`, app.api_key, { id: `p${i}`, name: `P${i}` })),
      );
      await settled(ep.id, 10);
      expect(Date.now() - started, 'ten 1-second answers took well under 10 s').to.be.below(6_000);
    });
  });

  describe('nothing lost', () => {
    it('the relay starts a delivery whose workflow was never started (crash after commit)', async () => {
      const r = await receiver();
      const ep = await endpoint(r.url);
      const deps = testEnv().deps;
      // Commit an event, its delivery and the outbox row, as a request would, but "crash" before dispatch.
      await deps.orm.em.fork().transactional(async (em) => {
        const tx = {
          em,
          temporal: (cmd: Parameters<typeof enqueueTemporal>[1]) => void enqueueTemporal(em, cmd),
          emit: () => undefined,
        };
        const event = recordEvent(em, app.id, 'plan.created', { object: { id: 'ghost' } });
        await fanOut(tx, deps, event);
      });
      const [req] = await r.waitFor(1);
      expect(verify(ep.secret, req)).to.deep.include({ type: 'plan.created' });
      const [d] = await settled(ep.id);
      expect(d.status).to.equal('succeeded');
    });

    it('a worker killed during the retry schedule continues at the right attempt after a restart', async () => {
      const r = await receiver((n) => (n < 2 ? { status: 500 } : { status: 200 }));
      const ep = await endpoint(r.url);
      const env = testEnv();
      env.deps.config.WEBHOOK_RETRY_SCHEDULE_MS = [1500, 1500, 1500, 1500, 1500, 1500];
      try {
        await post(`${base}/plans`, app.api_key, { id: 'pro', name: 'Pro' });
        await r.waitFor(1);
      } finally {
        env.deps.config.WEBHOOK_RETRY_SCHEDULE_MS = [300, 300, 300, 300, 300, 300];
      }
      await env.stopWorker();
      try {
        await new Promise((res) => setTimeout(res, 3500)); // attempt 2 falls due while no worker runs
        expect(r.received).to.have.length(1);
      } finally {
        await env.startWorker();
      }
      const got = await r.waitFor(3);
      const [d] = await settled(ep.id);
      expect(d).to.deep.include({ status: 'succeeded', attempts: 3 });
      expect(new Set(got.map((x) => x.headers['webhook-id'])).size).to.equal(1);
    });
  });

  describe('the production retry schedule', () => {
    it('is now, 1 min, 5 min, 30 min, 2 h, 8 h, 24 h: seven attempts', () => {
      expect(DEFAULT_RETRY_SCHEDULE_MS).to.deep.equal([
        60_000,
        5 * 60_000,
        30 * 60_000,
        2 * 3_600_000,
        8 * 3_600_000,
        24 * 3_600_000,
      ]);
      expect(loadConfig({}).WEBHOOK_RETRY_SCHEDULE_MS).to.deep.equal(DEFAULT_RETRY_SCHEDULE_MS);
    });
  });

  describe('usage threshold events', () => {
    it('fire once per crossing of 80% and of the limit, only with a subscriber, with the catalog shape', async () => {
      await seedCatalog(app);
      await patch(`${base}/plans/pro/entitlements/api_calls`, app.api_key, { max: 10 });
      await createAccount(app, { id: 'u1', plan: 'pro' });
      const add = (n: number) => post(`${base}/namespaces/u1/usage/api_calls/amount`, app.api_key, { amount: n });
      await add(9); // crosses 80% with nobody listening: no event
      expect((await get(`${base}/events?type=usage.limit_warning`, app.api_key)).body.data).to.have.length(0);
      await call('POST', `${base}/namespaces/u1/usage/api_calls/amount`, { token: app.api_key, body: { amount: -9 } });

      const r = await receiver();
      const ep = await endpoint(r.url, ['usage.limit_warning', 'usage.limit_reached']);
      await add(7); // 7/10: below 80%
      await add(1); // 8/10: warning
      await add(1); // 9/10: nothing new
      await add(1); // 10/10: reached
      await add(5); // past the limit: nothing new
      const events = (await get(`${base}/events`, app.api_key)).body.data.filter((e: { type: string }) =>
        e.type.startsWith('usage.'),
      );
      expect(events.map((e: { type: string }) => e.type)).to.deep.equal(['usage.limit_reached', 'usage.limit_warning']);
      expect(events[1].data.object).to.deep.equal({
        account_id: 'u1',
        entitlement_id: 'api_calls',
        entitlement_name: 'API calls',
        entity: null,
        usage: 8,
        max: 10,
        left: 2,
        percent: 80,
      });
      expect(events[0].data.object).to.deep.include({ usage: 10, left: 0, percent: 100 });
      const sample = (await get('/event-types')).body.find((t: { type: string }) => t.type === 'usage.limit_warning')
        .sample.object;
      expect(Object.keys(events[1].data.object).sort()).to.deep.equal(Object.keys(sample).sort());
      await r.waitFor(2);
      expect((await settled(ep.id, 2)).map((d) => d.status)).to.deep.equal(['succeeded', 'succeeded']);

      await call('POST', `${base}/namespaces/u1/usage/api_calls/amount`, { token: app.api_key, body: { amount: -10 } });
      await add(10); // 5 -> 15: crosses both at once
      const again = (await get(`${base}/events`, app.api_key)).body.data.filter((e: { type: string }) =>
        e.type.startsWith('usage.'),
      );
      expect(again.map((e: { type: string }) => e.type).sort()).to.deep.equal([
        'usage.limit_reached',
        'usage.limit_reached',
        'usage.limit_warning',
        'usage.limit_warning',
      ]);
    });

    it('an event whose fan-out a crash interrupted is fanned out by the relay', async () => {
      const r = await receiver();
      const ep = await endpoint(r.url, ['usage.limit_reached']);
      const em = testEnv().deps.orm.em.fork();
      await sql(
        em,
        `insert into events (id, app_id, type, data, created_at, fanout_pending) values ($1, $2,
          'usage.limit_reached', '{"object":{}}', now() - interval '5 seconds', true)`,
        [`evt_stranded_${Date.now()}`, app.id],
      );
      await r.waitFor(1);
      expect((await settled(ep.id))[0].status).to.equal('succeeded');
    });
  });

  describe('event log and catalog', () => {
    it('GET /events: the last 30 days, newest first, filtered by type, limited', async () => {
      for (const id of ['a', 'b', 'c']) await post(`${base}/plans`, app.api_key, { id, name: id });
      await sql(
        testEnv().deps.orm.em.fork(),
        `insert into events (id, app_id, type, data, created_at) values ($1, $2, 'plan.created', '{}', now() -
          interval '31 days')`,
        [`evt_old_${Date.now()}`, app.id],
      );
      const all = (await get(`${base}/events`, app.api_key)).body.data;
      expect(all.map((e: { data: { object: { id: string } } }) => e.data.object.id)).to.deep.equal(['c', 'b', 'a']);
      expect((await get(`${base}/events?limit=1`, app.api_key)).body.data).to.have.length(1);
      expect((await get(`${base}/events?type=plan.deleted`, app.api_key)).body.data).to.have.length(0);
      expect((await get(`${base}/events`, app.public_key)).status).to.equal(401);
    });

    it('GET /event-types lists every type with a sample built like real payloads', async () => {
      const res = await get('/event-types');
      expect(res.status).to.equal(200);
      const types = res.body.map((t: { type: string }) => t.type);
      expect(types).to.include.members([
        'account.created',
        'usage.limit_warning',
        'checkout.completed',
        'subscription.paused',
        'cancel_flow.cancelled',
        'subscription.changed',
        'subscription.change_scheduled',
        'subscription.untracked',
      ]);
      // The spec's 22, the plan change and untracked subscription events (issue 30), and the account actor's
      // (issue 40: change dropped, cancel scheduled and undone, payment failed, past due, recovered, grace ended), and
      // the credits' (issue 42: granted, low, depleted, expired).
      expect(types).to.have.length(36);
      await seedCatalog(app);
      await createAccount(app, { id: 'real', plan: 'pro' });
      const [real] = (await get(`${base}/events?type=account.created`, app.api_key)).body.data;
      const sample = res.body.find((t: { type: string }) => t.type === 'account.created').sample;
      expect(Object.keys(sample.object).sort()).to.deep.equal(Object.keys(real.data.object).sort());
      const [plan] = (await get(`${base}/events?type=plan.created`, app.api_key)).body.data;
      expect(
        Object.keys(res.body.find((t: { type: string }) => t.type === 'plan.created').sample.object).sort(),
      ).to.deep.equal(Object.keys(plan.data.object).sort());
    });
  });

  describe('retention', () => {
    it('a Temporal Schedule removes events and deliveries older than 30 days', async () => {
      const r = await receiver();
      const ep = await endpoint(r.url);
      await post(`${base}/plans`, app.api_key, { id: 'fresh', name: 'Fresh' });
      await settled(ep.id);
      const em = testEnv().deps.orm.em.fork();
      const oldEvent = `evt_old_${Date.now()}`;
      await sql(
        em,
        `insert into events (id, app_id, type, data, created_at) values ($1, $2, 'plan.created', '{}', now() -
          interval '31 days')`,
        [oldEvent, app.id],
      );
      await sql(
        em,
        `insert into webhook_deliveries (id, app_id, endpoint_id, event_id, event_type, status, attempts, payload,
          created_at, updated_at)
         values ($1, $2, $3, $4, 'plan.created', 'succeeded', 1, '{}', now() - interval '31 days', now())`,
        [`whd_old_${Date.now()}`, app.id, ep.id, oldEvent],
      );
      const schedule = testEnv().deps.temporal.client.schedule.getHandle('retention/events-and-deliveries');
      const before = (await schedule.describe()).info.recentActions.length;
      await schedule.trigger();
      await eventually(async () => (await schedule.describe()).info.recentActions.length > before);
      const latest = (await schedule.describe()).info.recentActions.at(-1)!;
      await testEnv()
        .deps.temporal.client.workflow.getHandle(
          latest.action.workflow.workflowId,
          latest.action.workflow.firstExecutionRunId,
        )
        .result();
      const left = await sql<{ n: string }>(em, `select count(*) as n from events where id = $1`, [oldEvent]);
      expect(Number(left[0].n)).to.equal(0);
      expect(await deliveries(ep.id)).to.have.length(1);
      expect((await get(`${base}/events`, app.api_key)).body.data).to.have.length(1);
    });
  });
});
