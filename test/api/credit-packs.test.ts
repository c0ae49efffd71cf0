// Credit top-up packs (issue 42, item 4): defined in the catalog, bought through a PayPal order at the stand-in,
// granted once when PayPal confirms the capture, taken back (what is left) on a refund at PayPal.
import { expect } from 'chai';
import { sql } from '../../src/db/sql.js';
import { grantPackOrder } from '../../src/credits/packs-payments.service.js';
import { connectBilling, createAccount, paypalClientOf, seededApp, type TestApp } from '../helpers/factories.js';
import { call, del, get, post } from '../helpers/http.js';
import { connectMcp, resultJson } from '../helpers/mcp.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

/** The pool `credits` (Pro grants 100 a month) and `premium` drawing 10 a message; pack `boost`: 1,000 for $10. */
async function packsCatalog(app: TestApp, base: string) {
  const ok = async (path: string, body: unknown) => {
    const res = await post(`${base}${path}`, app.api_key, body);
    expect(res.status, `${path} ${res.text}`).to.equal(201);
    return res.body;
  };
  await ok('/entitlements', { id: 'credits', type: 'credits', name: 'AI credits' });
  await ok('/entitlements', { id: 'premium', type: 'usage', name: 'Premium', credits: { pool: 'credits', cost: 10 } });
  await ok('/plans/pro/entitlements', { id: 'premium', max: null });
  await ok('/plans/pro/entitlements', { id: 'credits', max: 100 });
  const boost = await ok('/credit-packs', {
    id: 'boost',
    pool: 'credits',
    amount: 1000,
    price: '10.00',
    currency: 'usd',
  });
  // a1 on Pro: its actor grants the plan's 100 for the month.
  await createAccount(app, { id: 'a1', plan: 'pro' });
  await eventually(async () => (await balanceOf(base, app.api_key)) === 100);
  return boost;
}

async function balanceOf(base: string, key: string, account = 'a1') {
  const res = await get(`${base}/namespaces/${account}/credits`, key);
  expect(res.status, res.text).to.equal(200);
  return (res.body.data as { pool: string; balance: number }[]).find((p) => p.pool === 'credits')?.balance ?? 0;
}

async function topupRows(appId: string, account = 'a1') {
  return sql<{ amount: string; kind: string; ref: string | null }>(
    testEnv().deps.orm.em.fork(),
    `select amount, kind, ref from credit_ledger where app_id = $1 and account_id = $2 and kind in ('topup', 'reversal')
      order by id`,
    [appId, account],
  );
}

/** The balance is the ledger's sum, and the grants' remainders less what is not yet allocated. */
async function ledgerAddsUp(appId: string) {
  const rows = await sql<{ balance: string; ledger: string; grants: string; unallocated: string }>(
    testEnv().deps.orm.em.fork(),
    `select b.balance, b.unallocated,
            (select coalesce(sum(amount), 0) from credit_ledger l where l.app_id = b.app_id and
              l.account_id = b.account_id and l.pool_id = b.pool_id and l.entity_id = b.entity_id) as ledger,
            (select coalesce(sum(remaining), 0) from credit_grants g where g.app_id = b.app_id and
              g.account_id = b.account_id and g.pool_id = b.pool_id and g.entity_id = b.entity_id) as grants
       from credit_balances b where b.app_id = $1`,
    [appId],
  );
  for (const r of rows) {
    expect(Number(r.ledger), 'the balance is the ledger sum').to.equal(Number(r.balance));
    expect(Number(r.grants) - Number(r.unallocated)).to.equal(Number(r.balance));
  }
}

describe('credit packs', function () {
  this.timeout(60_000);
  let app: TestApp;
  let base: string;
  beforeEach(async () => {
    ({ app, base } = await seededApp());
  });

  it('defines, lists, archives and deletes packs; bad definitions are 4xx naming the field', async () => {
    const boost = await packsCatalog(app, base);
    expect(boost).to.include({ id: 'boost', pool: 'credits', amount: 1000, price: 10, currency: 'USD' });
    expect(boost.archived).to.equal(false);
    const small = await post(`${base}/credit-packs`, app.api_key, {
      id: 'Small Pack',
      pool: 'credits',
      amount: 100,
      price: 1.5,
    });
    expect(small.status, small.text).to.equal(201);
    expect(small.body).to.include({ id: 'small_pack', price: 1.5, currency: 'USD' });

    const bad = async (body: Record<string, unknown>, status: number, match: RegExp) => {
      const res = await post(`${base}/credit-packs`, app.api_key, {
        id: 'x',
        pool: 'credits',
        amount: 10,
        price: 1,
        ...body,
      });
      expect(res.status, res.text).to.equal(status);
      expect(res.body.error).to.match(match);
    };
    await bad({ pool: 'api_calls' }, 409, /pool: entitlement api_calls is of type usage, not a credits pool/);
    await bad({ pool: 'nope' }, 404, /pool: the app has no entitlement nope/);
    await bad({ amount: 0 }, 400, /amount/);
    await bad({ amount: 2.5 }, 400, /amount/);
    await bad({ price: 0 }, 400, /price/);
    await bad({ price: '1.999' }, 400, /price/);
    await bad({ price: 1.005 }, 400, /price/);
    await bad({ currency: 'dollars' }, 400, /currency/);
    await bad({ id: 'boost' }, 409, /already exists/);

    const list = await get(`${base}/credit-packs`, app.api_key);
    expect(list.status).to.equal(200);
    expect(list.body.map((p: { id: string }) => p.id)).to.deep.equal(['boost', 'small_pack']);
    // A single pack and the writes are the seller's; the list of packs on sale is public (the components' Top up).
    expect((await get(`${base}/credit-packs/boost`, app.public_key)).status, 'a pack is the seller’s').to.equal(401);

    const archived = await post(`${base}/credit-packs/small_pack/archive`, app.api_key);
    expect(archived.status, archived.text).to.equal(200);
    expect(archived.body.archived).to.equal(true);
    const onSale = await get(`${base}/credit-packs?archived=false`, app.api_key);
    expect(onSale.body.map((p: { id: string }) => p.id)).to.deep.equal(['boost']);
    // A publishable key reads only the packs on sale, whatever it asks for.
    const shown = await get(`${base}/credit-packs?archived=true`, app.public_key);
    expect(shown.status, shown.text).to.equal(200);
    expect(shown.body.map((p: { id: string }) => p.id)).to.deep.equal(['boost']);
    await connectBilling(app);
    const refused = await post(`${base}/credit-packs/small_pack/checkout`, app.api_key, { account: 'a1' });
    expect(refused.status, refused.text).to.equal(409);
    expect(refused.body.reason).to.equal('pack_archived');

    expect((await del(`${base}/credit-packs/small_pack`, app.api_key)).status).to.equal(200);
    expect((await get(`${base}/credit-packs/small_pack`, app.api_key)).status).to.equal(404);
  });

  it('a checkout makes a PayPal order; nothing is granted before PayPal confirms the capture, then once', async () => {
    await packsCatalog(app, base);
    await connectBilling(app);
    const paypal = testEnv().paypal;
    const before = await balanceOf(base, app.api_key);
    expect(before).to.equal(100);

    const res = await post(`${base}/credit-packs/boost/checkout`, app.public_key, {
      account: 'a1',
      return_url: 'https://shop.example/thanks',
    });
    expect(res.status, res.text).to.equal(201);
    const order = res.body;
    expect(order).to.include({ object: 'credit_pack_order', status: 'created', pack: 'boost', account: 'a1' });
    expect(order).to.include({ amount: 1000, price: 10, currency: 'USD', capture_id: null });
    const providerOrderId = new URL(order.approve_url).searchParams.get('token')!;
    const atPayPal = paypal.order(providerOrderId)!;
    expect(atPayPal.status).to.equal('CREATED');
    expect(atPayPal.purchase_units[0].amount).to.deep.equal({ currency_code: 'USD', value: '10.00' });
    expect(atPayPal.purchase_units[0].custom_id).to.equal(order.id);

    // Not approved: a `complete`, and a forged return to the hosted page with the order's token, grant nothing.
    const early = await post(`/apps/${app.id}/credit-pack-orders/${order.id}/complete`, app.public_key);
    expect(early.status, early.text).to.equal(200);
    expect(early.body.status).to.equal('created');
    const forged = await call('GET', `/apps/${app.id}/checkouts/return?token=${providerOrderId}&PayerID=X`, {});
    expect(forged.status).to.equal(200);
    expect(forged.text).to.match(/being confirmed/);
    expect(await balanceOf(base, app.api_key)).to.equal(100);
    expect(await topupRows(app.id)).to.deep.equal([]);

    // Approved: PayPal's CHECKOUT.ORDER.APPROVED makes the service capture; the capture grants 1,000 once.
    await paypal.approve(order.approve_url);
    const done = await eventually(async () => {
      const o = await get(`/apps/${app.id}/credit-pack-orders/${order.id}`, app.api_key);
      return o.body.status === 'completed' ? o.body : undefined;
    });
    expect(done.capture_id).to.match(/^CAP/);
    expect(done.grant).to.match(/^grt_/);
    expect(paypal.order(providerOrderId)!.status).to.equal('COMPLETED');
    expect(await balanceOf(base, app.api_key)).to.equal(1100);
    // The notification of the capture arrives too (and again): nothing more is granted.
    await new Promise((r) => setTimeout(r, 300));
    expect(await topupRows(app.id)).to.deep.equal([{ amount: '1000', kind: 'topup', ref: done.capture_id }]);
    const grants = (await get(`${base}/namespaces/a1/credits`, app.api_key)).body.data[0].grants;
    expect(grants.find((g: { id: string }) => g.id === done.grant)).to.include({ source: 'pack', amount: 1000 });
    const ledger = (await get(`${base}/namespaces/a1/credits/ledger`, app.api_key)).body.data;
    expect(ledger[0]).to.include({ kind: 'topup', amount: 1000, ref: done.capture_id, grant: done.grant });
    await ledgerAddsUp(app.id);
  });

  it('grants exactly once when the capture notification, complete calls and a repeated grant race', async () => {
    await packsCatalog(app, base);
    await connectBilling(app);
    const paypal = testEnv().paypal;
    const order = (await post(`${base}/credit-packs/boost/checkout`, app.api_key, { account: 'a1' })).body;
    const providerOrderId = new URL(order.approve_url).searchParams.get('token')!;
    await paypal.approve(order.approve_url);
    // Every door at once: complete calls (each may capture), the capture notification sent again and again, and the
    // grant itself called directly with the capture id.
    const captured = await eventually(
      async () => paypal.order(providerOrderId)?.purchase_units[0].payments?.captures?.[0],
    );
    await Promise.all([
      ...Array.from({ length: 4 }, () => post(`/apps/${app.id}/credit-pack-orders/${order.id}/complete`, app.api_key)),
      ...Array.from({ length: 4 }, () =>
        paypal.notify(paypalClientOf(app).client_id, 'PAYMENT.CAPTURE.COMPLETED', captured),
      ),
      ...Array.from({ length: 4 }, () => grantPackOrder(testEnv().deps, app.id, order.id, captured.id)),
    ]);
    await eventually(async () => (await balanceOf(base, app.api_key)) === 1100);
    await new Promise((r) => setTimeout(r, 300));
    expect(await balanceOf(base, app.api_key)).to.equal(1100);
    expect(await topupRows(app.id)).to.deep.equal([{ amount: '1000', kind: 'topup', ref: captured.id }]);
    // The database refuses a second order with the same capture, whoever tries.
    const dup = await sql(
      testEnv().deps.orm.em.fork(),
      `insert into credit_pack_orders (id, app_id, account_id, pack_id, pool_id, amount, price, currency, status,
         return_url, capture_id) values ('cpo_dup', $1, 'a1', 'boost', 'credits', 1, 1, 'USD', 'completed', 'x', $2)`,
      [app.id, captured.id],
    ).catch((e: { code?: string; cause?: { code?: string } }) => e.code ?? e.cause?.code);
    expect(dup).to.equal('23505');
    await ledgerAddsUp(app.id);
  });

  it('a refund at PayPal takes back what is left of the pack, in part and in full, never below zero', async () => {
    await packsCatalog(app, base);
    await connectBilling(app);
    const paypal = testEnv().paypal;
    const order = (await post(`${base}/credit-packs/boost/checkout`, app.api_key, { account: 'a1' })).body;
    await paypal.approve(order.approve_url);
    const done = await eventually(async () => {
      const o = await post(`/apps/${app.id}/credit-pack-orders/${order.id}/complete`, app.api_key);
      return o.body.status === 'completed' ? o.body : undefined;
    });
    expect(await balanceOf(base, app.api_key)).to.equal(1100);

    // A quarter refunded: 250 of the pack's credits go back to... the seller: taken from the pack's grant.
    paypal.refundAtProvider(done.capture_id, '2.50');
    await eventually(async () => (await balanceOf(base, app.api_key)) === 850);
    // Spend 800 (the plan's 100 first: it expires first), leaving 50 of the pack.
    const spent = await post(`${base}/namespaces/a1/usage/premium/amount`, app.api_key, { amount: 80 });
    expect(spent.status, spent.text).to.equal(200);
    expect(await balanceOf(base, app.api_key)).to.equal(50);
    // The rest refunded: 750 more would be owed, only 50 are left: 50 are taken, the balance stops at 0.
    paypal.refundAtProvider(done.capture_id);
    await eventually(async () => (await balanceOf(base, app.api_key)) === 0);
    const o = (await get(`/apps/${app.id}/credit-pack-orders/${order.id}`, app.api_key)).body;
    expect(o).to.include({ refunded: 10, taken_back: 300 });
    const rows = await topupRows(app.id);
    expect(rows.map((r) => [r.kind, Number(r.amount)])).to.deep.equal([
      ['topup', 1000],
      ['reversal', -250],
      ['reversal', -50],
    ]);
    // The same refund notified again takes nothing more.
    const refunds = await sql<{ refund_id: string }>(
      testEnv().deps.orm.em.fork(),
      'select refund_id from credit_pack_refunds where order_id = $1',
      [order.id],
    );
    expect(refunds).to.have.length(2);
    await paypal.notify(paypalClientOf(app).client_id, 'PAYMENT.CAPTURE.REFUNDED', {
      id: refunds[0].refund_id,
      status: 'COMPLETED',
      amount: { currency_code: 'USD', value: '2.50' },
      links: [{ rel: 'up', href: `${paypal.baseUrl}/v2/payments/captures/${done.capture_id}`, method: 'GET' }],
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(await topupRows(app.id)).to.have.length(3);
    await ledgerAddsUp(app.id);
  });

  it('refuses crossing tenants: another app’s pack, account or order, another account’s token', async () => {
    await packsCatalog(app, base);
    await connectBilling(app);
    await createAccount(app, { id: 'a2', plan: 'pro' });
    const other = await seededApp({ accounts: [{ id: 'b1', plan: 'pro' }] });
    await connectBilling(other.app);
    // The other app's keys on this app's pack: not theirs.
    const foreignKey = await post(`${base}/credit-packs/boost/checkout`, other.app.api_key, { account: 'a1' });
    expect(foreignKey.status).to.equal(401);
    // Through the other app: no pack `boost` there; and this app's pack for the other app's account: not found.
    const noPack = await post(`${other.base}/credit-packs/boost/checkout`, other.app.api_key, { account: 'b1' });
    expect(noPack.status, noPack.text).to.equal(404);
    const noAccount = await post(`${base}/credit-packs/boost/checkout`, app.api_key, { account: 'b1' });
    expect(noAccount.status, noAccount.text).to.equal(404);
    // An account token buys for its own account only, and sees only its own orders.
    const token = (await post(`${base}/namespaces/a1/token`, app.api_key, {})).body.token;
    const forA2 = await post(`${base}/credit-packs/boost/checkout`, token, { account: 'a2' });
    expect(forA2.status, forA2.text).to.equal(403);
    const mine = await post(`${base}/credit-packs/boost/checkout`, token, { account: 'a1' });
    expect(mine.status, mine.text).to.equal(201);
    const a2order = (await post(`${base}/credit-packs/boost/checkout`, app.api_key, { account: 'a2' })).body;
    expect((await get(`/apps/${app.id}/credit-pack-orders/${a2order.id}`, token)).status).to.equal(404);
    expect((await get(`/apps/${app.id}/credit-pack-orders/${mine.body.id}`, token)).status).to.equal(200);
    expect((await get(`/apps/${other.app.id}/credit-pack-orders/${mine.body.id}`, other.app.api_key)).status).to.equal(
      404,
    );
    const mineList = await get(`${base}/namespaces/a1/credit-pack-orders`, token);
    expect(mineList.body.map((o: { id: string }) => o.id)).to.deep.equal([mine.body.id]);
    expect((await get(`${base}/namespaces/a2/credit-pack-orders`, token)).status).to.equal(401);
  });

  it('the credits_exhausted 402 names the pool’s packs on sale with the way to buy each', async () => {
    await packsCatalog(app, base);
    await post(`${base}/credit-packs`, app.api_key, { id: 'mini', pool: 'credits', amount: 200, price: 3 });
    await post(`${base}/credit-packs`, app.api_key, { id: 'old', pool: 'credits', amount: 50, price: 1 });
    await post(`${base}/credit-packs/old/archive`, app.api_key);
    const refused = await post(`${base}/namespaces/a1/usage/premium/amount`, app.public_key, { amount: 11 });
    expect(refused.status, refused.text).to.equal(402);
    expect(refused.body.error).to.equal('credits_exhausted');
    expect(refused.body.packs).to.deep.equal([
      {
        id: 'mini',
        amount: 200,
        price: 3,
        currency: 'USD',
        checkout: { method: 'POST', path: `/apps/${app.id}/credit-packs/mini/checkout` },
      },
      {
        id: 'boost',
        amount: 1000,
        price: 10,
        currency: 'USD',
        checkout: { method: 'POST', path: `/apps/${app.id}/credit-packs/boost/checkout` },
      },
    ]);
    expect(refused.body.message).to.match(/buy 200 AI credits for 3 USD \(pack mini\)/);
  });

  it('MCP create_topup_link makes the order for namespaceId and returns its approval link', async () => {
    await packsCatalog(app, base);
    await connectBilling(app);
    const { client } = await connectMcp(app.id, { key: app.api_key });
    try {
      const r = await client.callTool({
        name: 'create_topup_link',
        arguments: { packId: 'boost', namespaceId: 'a1', return_url: 'https://shop.example/thanks' },
      });
      expect(r.isError, JSON.stringify(r)).to.not.equal(true);
      const order = resultJson(r);
      expect(order).to.include({ object: 'credit_pack_order', account: 'a1', pack: 'boost', status: 'created' });
      const token = new URL(order.approve_url).searchParams.get('token')!;
      expect(testEnv().paypal.order(token)!.purchase_units[0].custom_id).to.equal(order.id);
      const missing = await client.callTool({
        name: 'create_topup_link',
        arguments: { packId: 'boost', namespaceId: 'zz' },
      });
      expect(missing.isError).to.equal(true);
    } finally {
      await client.close();
    }
  });
});
