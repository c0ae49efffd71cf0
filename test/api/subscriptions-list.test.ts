// The app-wide subscription list (GET /apps/:appId/subscriptions) and the cursor pages it shares with the event
// log (GET /apps/:appId/events): real purchases at the PayPal stand-in, a real pause and cancel, plus rows written
// straight into the table where a test needs many subscriptions or two created in the same microsecond.
import { expect } from 'chai';
import { SecretClient } from '@offerkit/sdk';
import { sql } from '../../src/db/sql.js';
import { createAccount, createTestApp, purchase, seededApp, type TestApp } from '../helpers/factories.js';
import { get, post, type Res } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';

interface Item {
  account_id: string;
  status: string;
  plan: string;
  pause: { resume_at: string | null; restore_plan: string | null } | null;
}
interface ListPage {
  data: Item[];
  next_cursor: string | null;
}

/** Subscriptions written directly: `at` is each one's created_at (SQL text, microseconds allowed). */
async function insertSubscriptions(
  app: TestApp,
  rows: { account: string; at: string; status?: string; plan?: string }[],
) {
  for (const r of rows) {
    await createAccount(app, { id: r.account, plan: 'free' });
    await sql(
      testEnv().deps.orm.em.fork(),
      `insert into subscriptions (app_id, account_id, provider_subscription_id, plan_id, interval, currency, price,
         status, created_at, updated_at)
       values ($1, $2, $3, $4, 'month', 'USD', 29, $5, $6::timestamptz, now())`,
      [app.id, r.account, `I-${r.account}`, r.plan ?? 'pro', r.status ?? 'active', r.at],
    );
  }
}

describe('GET /apps/:appId/subscriptions', function () {
  this.timeout(120_000);
  let app: TestApp;
  let base: string;
  const list = async (query = '', token = app.api_key) => {
    const res = await get<ListPage>(`${base}/subscriptions${query}`, token);
    expect(res.status, res.text).to.equal(200);
    return res.body;
  };
  const ids = (p: ListPage) => p.data.map((s) => s.account_id);
  /** Every item of every page, following next_cursor. */
  const walk = async (query: string) => {
    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const sep = query ? '&' : '?';
      const page = await list(`${query}${cursor ? `${sep}cursor=${encodeURIComponent(cursor)}` : ''}`);
      pages.push(ids(page));
      cursor = page.next_cursor;
    } while (cursor && pages.length < 20);
    return pages;
  };

  beforeEach(async () => {
    ({ app, base } = await seededApp());
  });

  it('lists real subscriptions newest first, each as the account subscription view plus account_id, with its pause', async () => {
    expect(await list()).to.deep.equal({ data: [], next_cursor: null });
    for (const a of ['ada', 'bob', 'cy']) {
      await createAccount(app, { id: a, plan: 'free' });
      await purchase(app, a);
    }
    const paused = await post(`${base}/namespaces/bob/subscription/pause`, app.api_key, {
      months: 12,
      reason: 'travel',
    });
    expect(paused.status, paused.text).to.equal(200);
    expect((await post(`${base}/namespaces/cy/subscription/cancel`, app.api_key)).status).to.equal(200);

    // Without status: the subscriptions that have not ended (as Stripe's list): active and paused, newest first.
    const current = await list();
    expect(ids(current)).to.deep.equal(['bob', 'ada']);
    expect(current.next_cursor).to.equal(null);
    const [bob, ada] = current.data;
    const { account_id: _id, ...bobView } = bob;
    expect(bobView, 'the same view as the per-account read').to.deep.equal(
      (await get(`${base}/namespaces/bob/subscription`, app.api_key)).body,
    );
    expect(bob).to.deep.include({ status: 'paused', plan: 'pro' });
    expect(bob.pause).to.deep.include({
      restore_plan: 'pro',
      reason: 'travel',
      resume_at: paused.body.pause.resume_at,
    });
    expect(Date.parse(bob.pause!.resume_at!)).to.be.greaterThan(Date.now());
    expect(ada).to.deep.include({ status: 'active', pause: null });

    expect(ids(await list('?status=active'))).to.deep.equal(['ada']);
    expect(ids(await list('?status=paused'))).to.deep.equal(['bob']);
    expect(ids(await list('?status=cancelled'))).to.deep.equal(['cy']);
    expect(ids(await list('?status=all'))).to.deep.equal(['cy', 'bob', 'ada']);
    // The plan filter is the paid plan (a paused subscription keeps it while the account is on free), normalized
    // like every caller id.
    expect(ids(await list('?plan=pro'))).to.deep.equal(['bob', 'ada']);
    expect(ids(await list('?plan=PRO&status=all'))).to.deep.equal(['cy', 'bob', 'ada']);
    expect(ids(await list('?plan=scale'))).to.deep.equal([]);
    expect(ids(await list('?plan=no_such_plan'))).to.deep.equal([]);
  });

  it('pages with next_cursor: every item once, ties on created_at broken by account id, newcomers not repeated', async () => {
    // Five subscriptions, two of them created in the same microsecond, one cancelled, one on another plan.
    await insertSubscriptions(app, [
      { account: 'a1', at: '2026-01-01T10:00:00.000001Z' },
      { account: 'a2', at: '2026-01-01T10:00:00.000002Z', plan: 'scale' },
      { account: 'a3', at: '2026-01-01T10:00:00.000002Z' },
      { account: 'a4', at: '2026-01-02T10:00:00Z', status: 'cancelled' },
      { account: 'a5', at: '2026-01-03T10:00:00Z' },
    ]);
    const pages = await walk('?limit=2&status=all');
    expect(pages).to.deep.equal([['a5', 'a4'], ['a3', 'a2'], ['a1']]);
    // Microseconds matter: a cursor rounded to milliseconds would skip a3 or a2, or repeat them.
    expect(await walk('?limit=1')).to.deep.equal([['a5'], ['a3'], ['a2'], ['a1']]);
    expect(await walk('?limit=2&plan=pro')).to.deep.equal([['a5', 'a3'], ['a1']]);
    // A page that ends exactly at the last item says so (no next_cursor leading to an empty page).
    const page = await list('?limit=4');
    expect(ids(page)).to.deep.equal(['a5', 'a3', 'a2', 'a1']);
    expect(page.next_cursor).to.equal(null);

    // A subscription that starts between two pages is neither repeated nor shifts the next page (keyset, not offset).
    const first = await list('?limit=2&status=all');
    await insertSubscriptions(app, [{ account: 'a6', at: new Date().toISOString() }]);
    const second = await list(`?limit=2&status=all&cursor=${encodeURIComponent(first.next_cursor!)}`);
    expect(ids(second)).to.deep.equal(['a3', 'a2']);
    // The cursor is independent of the filters: it says where, not what.
    const active = await list(`?limit=10&status=active&cursor=${encodeURIComponent(first.next_cursor!)}`);
    expect(ids(active)).to.deep.equal(['a3', 'a2', 'a1']);

    // The SDK follows next_cursor when iterated.
    const sdk = new SecretClient({ secretKey: app.api_key, appId: app.id, baseUrl: testEnv().baseUrl });
    const all: string[] = [];
    for await (const s of sdk.subscriptions.list({ limit: 2, status: 'all' })) all.push(s.account_id);
    expect(all).to.deep.equal(['a6', 'a5', 'a4', 'a3', 'a2', 'a1']);
    const onePage = await sdk.subscriptions.list({ limit: 2 });
    expect(onePage.data.map((s) => s.account_id)).to.deep.equal(['a6', 'a5']);
    expect(onePage.next_cursor).to.be.a('string');
    const sizes: number[] = [];
    for await (const p of sdk.subscriptions.list({ limit: 4, status: 'all' }).pages()) sizes.push(p.data.length);
    expect(sizes).to.deep.equal([4, 2]);
  });

  it("never shows another app's subscriptions, and another app's key cannot list this one", async () => {
    const { app: other } = await seededApp();
    await insertSubscriptions(other, [
      { account: 'shared_id', at: '2026-01-05T00:00:00Z' },
      { account: 'theirs', at: '2026-01-06T00:00:00Z', status: 'paused' },
    ]);
    await insertSubscriptions(app, [{ account: 'shared_id', at: '2026-01-01T00:00:00Z' }]);
    expect(ids(await list('?status=all'))).to.deep.equal(['shared_id']);
    expect((await list('?status=all')).data[0]).to.deep.include({ account_id: 'shared_id', status: 'active' });
    expect(
      ids(await get<ListPage>(`/apps/${other.id}/subscriptions?status=all`, other.api_key).then((r) => r.body)),
    ).to.deep.equal(['theirs', 'shared_id']);
    // A cursor of the other app's list gives nothing of it here: it only says where in this app's list to go on.
    const theirs = (await get<ListPage>(`/apps/${other.id}/subscriptions?status=all&limit=1`, other.api_key)).body;
    expect(ids(await list(`?status=all&cursor=${encodeURIComponent(theirs.next_cursor!)}`))).to.deep.equal([
      'shared_id',
    ]);
  });

  it('credentials: secret key and admin key; the publishable key, an account token and no key get 401', async () => {
    await insertSubscriptions(app, [{ account: 'ada', at: '2026-01-01T00:00:00Z' }]);
    expect(ids(await list('', testEnv().adminKey))).to.deep.equal(['ada']);
    const token = (await post(`${base}/namespaces/ada/token`, app.api_key, {})).body.token;
    for (const key of [app.public_key, token, null, 'key_wrong'])
      expect((await get(`${base}/subscriptions`, key)).status, String(key)).to.equal(401);
    const other = await createTestApp();
    expect((await get(`${base}/subscriptions`, other.api_key)).status).to.equal(401);
  });

  it('bad input is a 400 naming the field: an unknown status, a limit out of range, a cursor it did not answer', async () => {
    const bad = async (query: string) => {
      const res = await get(`${base}/subscriptions${query}`, app.api_key);
      expect(res.status, query).to.equal(400);
      return res.body.error as string;
    };
    expect(await bad('?status=trialing')).to.equal(
      'status: unknown status "trialing" (one of active, paused, past_due, cancelled, all)',
    );
    expect(await bad('?status=')).to.match(/^status: unknown status ""/);
    expect(await bad('?limit=0')).to.match(/^limit: /);
    expect(await bad('?limit=ten')).to.match(/^limit: /);
    expect(await bad('?cursor=abc')).to.equal('cursor: is not a next_cursor this list answered');
    const forged = Buffer.from(JSON.stringify(["2026-01-01'; drop table subscriptions;--", 'x'])).toString('base64url');
    expect(await bad(`?cursor=${forged}`)).to.equal('cursor: is not a next_cursor this list answered');
    expect(await bad('?plan=%21')).to.match(/^plan: /);
    // limit above 100 is capped, as on the other lists.
    expect((await get(`${base}/subscriptions?limit=1000`, app.api_key)).status).to.equal(200);
  });
});

describe('GET /apps/:appId/events: cursor pages', function () {
  this.timeout(60_000);

  it('follows next_cursor through the log, newest first, each event once; type still filters', async () => {
    const app = await createTestApp();
    const base = `/apps/${app.id}`;
    await post(`${base}/plans`, app.api_key, { id: 'solo', name: 'Solo' });
    for (let i = 0; i < 5; i++) await createAccount(app, { id: `u${i}`, plan: 'solo' });
    const all = (await get(`${base}/events?limit=100`, app.api_key)).body;
    expect(all.next_cursor).to.equal(null);
    expect(all.data).to.have.length(6);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: Res<{ data: { id: string }[]; next_cursor: string | null }> = await get(
        `${base}/events?limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        app.api_key,
      );
      expect(res.status, res.text).to.equal(200);
      seen.push(...res.body.data.map((e) => e.id));
      cursor = res.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).to.equal(2);
    expect(seen).to.deep.equal(all.data.map((e: { id: string }) => e.id));
    const created = (await get(`${base}/events?type=account.created&limit=3`, app.api_key)).body;
    expect(created.data.map((e: { data: { object: { id: string } } }) => e.data.object.id)).to.deep.equal([
      'u4',
      'u3',
      'u2',
    ]);
    const rest = (
      await get(
        `${base}/events?type=account.created&limit=3&cursor=${encodeURIComponent(created.next_cursor)}`,
        app.api_key,
      )
    ).body;
    expect(rest.data.map((e: { data: { object: { id: string } } }) => e.data.object.id)).to.deep.equal(['u1', 'u0']);
    expect(rest.next_cursor).to.equal(null);
    expect((await get(`${base}/events?cursor=nope`, app.api_key)).body.error).to.equal(
      'cursor: is not a next_cursor this list answered',
    );
  });
});
