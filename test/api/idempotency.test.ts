import { expect } from 'chai';
import { sql } from '../../src/db/sql.js';
import { purgeExpired } from '../../src/housekeeping/retention.js';
import { IDEMPOTENCY_STALE_MS, idempotencyKeyOf } from '../../src/http/idempotency.js';
import type { RouteDef } from '../../src/http/route.js';
import { createAccount, seededApp, type TestApp } from '../helpers/factories.js';
import { call, get, patch } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';

const em = () => testEnv().deps.orm.em.fork();

describe('Idempotency-Key on POST', () => {
  let app: TestApp;
  let base: string;
  let u: string;
  beforeEach(async () => {
    ({ app, base } = await seededApp({ accounts: [{ id: 'a1', plan: 'pro' }] }));
    u = `${base}/namespaces/a1/usage`;
  });

  const send = (path: string, key: string | null, body: unknown = {}, token = app.api_key) =>
    call('POST', path, { token, body, headers: key === null ? {} : { 'Idempotency-Key': key } });
  const count = async (ent: string) => (await get(`${u}/${ent}`, app.api_key)).body.count as number;
  const historyRows = async () =>
    Number((await sql<{ n: string }>(em(), 'select count(*) as n from usage_events where app_id = $1', [app.id]))[0].n);

  it('40 concurrent retries of one usage amount with one key count once and all answer the first response', async function () {
    this.timeout(60_000);
    const results = await Promise.all(
      Array.from({ length: 40 }, () => send(`${u}/api_calls/amount`, 'retry-1', { amount: 7 })),
    );
    for (const r of results) {
      expect(r.status, r.text).to.equal(200);
      expect(r.body).to.deep.equal({ entitlement: 'api_calls', count: 7 });
    }
    expect(results.filter((r) => r.headers.get('idempotent-replayed') === null)).to.have.length(1);
    expect(await count('api_calls')).to.equal(7);
    expect(await historyRows()).to.equal(1);
    // Later retries too; another key counts again.
    const again = await send(`${u}/api_calls/amount`, 'retry-1', { amount: 7 });
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(again.body.count).to.equal(7);
    expect((await send(`${u}/api_calls/amount`, 'retry-2', { amount: 7 })).body.count).to.equal(14);
    expect((await send(`${u}/api_calls/add`, 'add-1')).body.count).to.equal(15);
    expect((await send(`${u}/api_calls/add`, 'add-1')).body.count).to.equal(15);
    expect((await send(`${u}/api_calls/remove`, 'rm-1')).body.count).to.equal(14);
    expect((await send(`${u}/api_calls/remove`, 'rm-1')).body.count).to.equal(14);
    expect(await count('api_calls')).to.equal(14);
  });

  it('the same key with another body or route is 422 and changes nothing; a bad key is 400', async () => {
    expect((await send(`${u}/api_calls/amount`, 'k', { amount: 2 })).status).to.equal(200);
    const other = await send(`${u}/api_calls/amount`, 'k', { amount: 3 });
    expect(other.status).to.equal(422);
    expect(other.body.error).to.match(/Idempotency-Key was already used with a different request/);
    expect((await send(`${u}/seats/amount`, 'k', { amount: 2 })).status).to.equal(422);
    expect((await send(`${u}/api_calls/add`, 'k')).status).to.equal(422);
    expect(await count('api_calls')).to.equal(2);
    expect(await count('seats')).to.equal(0);
    for (const bad of ['x'.repeat(256), 'has space'])
      expect((await send(`${u}/api_calls/add`, bad)).body).to.deep.equal({
        error: 'Idempotency-Key: must be 1 to 255 visible ASCII characters',
      });
    expect(await count('api_calls')).to.equal(2);
  });

  it('keys are scoped per app and credential', async () => {
    expect((await send(`${u}/api_calls/add`, 'shared')).body.count).to.equal(1);
    expect((await send(`${u}/api_calls/add`, 'shared', {}, app.public_key)).body.count).to.equal(2);
    expect((await send(`${u}/api_calls/add`, 'shared', {}, app.public_key)).body.count).to.equal(2);
    const { app: other } = await seededApp();
    await createAccount(other, { id: 'a1', plan: 'pro' });
    const r = await call('POST', `/apps/${other.id}/namespaces/a1/usage/api_calls/add`, {
      token: other.api_key,
      body: {},
      headers: { 'Idempotency-Key': 'shared' },
    });
    expect(r.body.count).to.equal(1);
    expect(r.headers.get('idempotent-replayed')).to.equal(null);
    expect(await count('api_calls')).to.equal(2);
  });

  it('a 402 is the key’s answer too: after the limit is raised the same key still answers it; a new key adds', async () => {
    await patch(`${base}/plans/pro/entitlements/seats`, app.api_key, { max: 1 });
    expect((await send(`${u}/seats/add`, 's1')).status).to.equal(200);
    const blocked = await send(`${u}/seats/add`, 's2');
    expect(blocked.status).to.equal(402);
    await patch(`${base}/plans/pro/entitlements/seats`, app.api_key, { max: 5 });
    const retry = await send(`${u}/seats/add`, 's2');
    expect(retry.status).to.equal(402);
    expect(retry.body).to.deep.equal(blocked.body);
    expect(retry.headers.get('idempotent-replayed')).to.equal('true');
    expect(await count('seats')).to.equal(1);
    expect((await send(`${u}/seats/add`, 's3')).body.count).to.equal(2);
  });

  it('any other POST: concurrent retries create one account and all answer the same 201; a 4xx is kept as well', async function () {
    this.timeout(60_000);
    const results = await Promise.all(
      Array.from({ length: 12 }, () => send(`${base}/namespaces`, 'create-b1', { id: 'b1', plan: 'free' })),
    );
    for (const r of results) {
      expect(r.status, r.text).to.equal(201);
      expect(r.body).to.deep.equal(results[0].body);
    }
    expect(results.filter((r) => r.headers.get('idempotent-replayed') === null)).to.have.length(1);
    const rows = await sql<{ n: string }>(em(), 'select count(*) as n from accounts where app_id = $1 and id = $2', [
      app.id,
      'b1',
    ]);
    expect(Number(rows[0].n)).to.equal(1);
    // Without the key the same body is a 409 (the account exists); with a new key too, and that 409 is replayed.
    const dup = await send(`${base}/namespaces`, 'create-b1-again', { id: 'b1', plan: 'free' });
    expect(dup.status).to.equal(409);
    await call('DELETE', `${base}/namespaces/b1`, { token: app.api_key });
    const replay = await send(`${base}/namespaces`, 'create-b1-again', { id: 'b1', plan: 'free' });
    expect(replay.status).to.equal(409);
    expect(replay.body).to.deep.equal(dup.body);
    expect((await get(`${base}/namespaces/b1`, app.api_key)).status, 'the replayed 409 created nothing').to.equal(404);
  });

  it('a first request that died mid-way leaves its key 409 (outcome unknown), never run twice', async () => {
    const def = { method: 'POST', path: '/apps/:appId/namespaces' } as RouteDef;
    const body = { id: 'c1', plan: 'free' };
    const key = idempotencyKeyOf(
      def,
      { params: { appId: app.id }, query: {}, body, caller: { kind: 'secret' }, appId: app.id },
      { 'idempotency-key': 'died' },
    )!;
    await sql(
      em(),
      `insert into idempotency_keys (digest, app_id, request_hash, created_at) values ($1, $2, $3, now() - make_interval(secs => $4))`,
      [key.digest, app.id, key.requestHash, IDEMPOTENCY_STALE_MS / 1000 + 60],
    );
    const r = await send(`${base}/namespaces`, 'died', body);
    expect(r.status).to.equal(409);
    expect(r.body.error).to.match(/did not finish and its outcome is unknown/);
    expect((await get(`${base}/namespaces/c1`, app.api_key)).status).to.equal(404);
  });

  it('keys last 24 hours: the retention run purges older ones, and an expired key runs again', async () => {
    expect((await send(`${u}/api_calls/add`, 'old')).body.count).to.equal(1);
    await sql(em(), `update idempotency_keys set created_at = now() - interval '25 hours' where app_id = $1`, [app.id]);
    expect((await send(`${u}/api_calls/add`, 'old')).body.count, 'expired: counted again').to.equal(2);
    await sql(em(), `update idempotency_keys set created_at = now() - interval '25 hours' where app_id = $1`, [app.id]);
    const result = await purgeExpired(testEnv().deps);
    expect(result.idempotencyKeys).to.be.at.least(1);
    const left = await sql(em(), 'select 1 from idempotency_keys where app_id = $1', [app.id]);
    expect(left).to.have.length(0);
  });
});
