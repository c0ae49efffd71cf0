// Issue 40, item 8: subscriptions, pauses, pending changes and timed incentives made by the previous release move
// into their account actors on upgrade, once, with nothing applied twice. The database is made as the previous
// release made it (its migrations, then its rows), the previous release's one-shot workflows are running in
// Temporal, and then this release starts on it.
import { expect } from 'chai';
import pg from 'pg';
import { Client, Connection } from '@temporalio/client';
import { openOrm } from '../../src/db/orm.js';
import { entities } from '../../src/entities.js';
import { PayPalProvider } from '../../src/payments/paypal.js';
import { accountDef, accountWorkflowId } from '../../workflows/shared.js';
import { startIsolatedStack, type IsolatedStack } from '../helpers/isolated.js';
import { PAYPAL_TEST_CREDENTIALS, testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

/** The previous release's last migration (everything after it is this release's). */
const PREVIOUS_RELEASE = 'Migration20261203100000_mcp_elicitations';
const APP = 'app_previousrelease';
const KEY = 'key_previousreleasesecretkey0000000000000000';
const DAY = 86_400_000;

describe('upgrade from the previous release: billing moves into the account actors, once', function () {
  this.timeout(240_000);
  let stack: IsolatedStack;
  const legacy: Record<string, string> = {};
  const subs: Record<string, string> = {};

  before(async () => {
    const [[clientId, clientSecret]] = Object.entries(PAYPAL_TEST_CREDENTIALS);
    const paypal = new PayPalProvider({ clientId, clientSecret, baseUrl: testEnv().paypal.baseUrl });
    const product = await paypal.createProduct({ name: 'Previous release' }, `prev-product-${Date.now()}`);
    const plan = (price: number) =>
      paypal.createPlan(
        { productId: product.id, name: `p${price}`, interval: 'month', price, currency: 'USD' },
        `prev-plan-${price}-${Date.now()}`,
      );
    const pro = (await plan(19)).id;
    const lite = (await plan(9)).id;
    /** A subscription the buyer approved (ACTIVE at the stand-in). */
    const subscribe = async (account: string) => {
      const s = await paypal.createSubscription(
        {
          planId: pro,
          customId: `prev-${account}`,
          returnUrl: 'https://shop.example/ok',
          cancelUrl: 'https://shop.example/no',
        },
        `prev-sub-${account}-${Date.now()}`,
      );
      await testEnv().paypal.approve(s.approveUrl!);
      await eventually(async () => ((await paypal.getSubscription(s.id)).status === 'ACTIVE' ? true : undefined));
      subs[account] = s.id;
      return s.id;
    };
    for (const a of ['ada', 'bob', 'cy', 'dee', 'fay']) await subscribe(a);
    await paypal.suspendSubscription(subs.bob, 'Paused for 1 month(s)');
    await paypal.cancelSubscription(subs.fay, 'Cancelled');
    const cyRevision = await paypal.reviseSubscription(subs.cy, {
      planId: lite,
      returnUrl: 'https://shop.example/ok',
      cancelUrl: 'https://shop.example/no',
    });
    const deeRevision = await paypal.reviseSubscription(subs.dee, {
      planId: lite,
      returnUrl: 'https://shop.example/ok',
      cancelUrl: 'https://shop.example/no',
    });
    await testEnv().paypal.approve(deeRevision.approveUrl!);
    expect(cyRevision.approveUrl).to.be.a('string');

    stack = await startIsolatedStack(
      {},
      {
        beforeStart: async ({ databaseUrl, temporalAddress, taskQueue }) => {
          // The previous release's schema: its migrations and no later one.
          const orm = await openOrm(databaseUrl, entities);
          await orm.migrator.up({ to: PREVIOUS_RELEASE });
          await orm.close();
          // Its rows, as it wrote them.
          const db = new pg.Client({ connectionString: databaseUrl });
          await db.connect();
          const now = Date.now();
          const iso = (ms: number) => new Date(now + ms).toISOString();
          const q = (text: string, params: unknown[] = []) => db.query(text, params);
          await q(
            `insert into apps (id, name, api_key, public_key, created_at, updated_at)
                   values ($1, 'Previous release', $2, 'pub_previousrelease000000000000000000000', now(), now())`,
            [APP, KEY],
          );
          await q(
            `insert into plans (app_id, id, name, is_free, pricing_card) values
                   ($1, 'free', 'Free', true, null),
                   ($1, 'pro', 'Pro', false, '{"monthlyPrice": 19, "currency": "USD"}'),
                   ($1, 'lite', 'Lite', false, '{"monthlyPrice": 9, "currency": "USD"}')`,
            [APP],
          );
          await q(`insert into incentives (app_id, id, name) values ($1, 'promo', 'Promo')`, [APP]);
          await q(
            `insert into payment_connections (app_id, env, client_id, client_secret, provider_refs)
                   values ($1, 'sandbox', $2, $3, $4)`,
            [APP, clientId, clientSecret, JSON.stringify({ productId: product.id, plans: {} })],
          );
          for (const [id, plan] of [
            ['ada', 'pro'],
            ['bob', 'free'],
            ['cy', 'pro'],
            ['dee', 'pro'],
            ['fay', 'free'],
            ['eve', 'free'],
          ])
            await q(`insert into accounts (app_id, id, plan_id) values ($1, $2, $3)`, [APP, id, plan]);
          await q(
            `update accounts set incentive_id = 'promo', incentive_expires_at = $2 where app_id = $1 and id = 'eve'`,
            [APP, iso(DAY)],
          );
          const sub = (account: string, status: string, extra = '', values: unknown[] = []) =>
            q(
              `insert into subscriptions (app_id, account_id, provider_subscription_id, plan_id, interval, currency, price,
                 status, renews_at, provider_status, provider_plan_id, last_payment_at ${extra})
               values ($1, $2, $3, 'pro', 'month', 'USD', 19, $4, $5, 'ACTIVE', $6, $7 ${values.map((_, i) => `, $${i + 8}`).join('')})`,
              [APP, account, subs[account], status, iso(30 * DAY), pro, iso(0), ...values],
            );
          await sub('ada', 'active');
          await sub('bob', 'paused', ', paused_at, resume_at, restore_plan_id, pause_count', [
            iso(0),
            iso(2 * DAY),
            'pro',
            1,
          ]);
          const change = (id: string, scheduled: boolean) => ({
            id,
            plan: 'lite',
            interval: 'month',
            currency: 'USD',
            price: 9,
            providerPlanId: lite,
            requestedAt: iso(0),
            expiresAt: iso(3 * 3_600_000),
            direction: 'downgrade',
            policy: 'at_renewal',
            effective: 'renewal',
            returnUrl: 'https://shop.example/ok',
            cancelUrl: 'https://shop.example/no',
            ...(scheduled ? { scheduledAt: iso(0) } : {}),
          });
          await sub('cy', 'active', ', pending_change', [JSON.stringify(change('chg_previouscy', false))]);
          await sub('dee', 'active', ', pending_change', [JSON.stringify(change('chg_previousdee', true))]);
          await sub('fay', 'cancelled', ', cancelled_at', [iso(0)]);
          await db.end();

          // The previous release's workflows, running: a pause whose timer has already fired (its old activity would
          // resume it now), a plan change waiting for approval, an incentive expiry.
          const connection = await Connection.connect({ address: temporalAddress });
          const client = new Client({ connection });
          const start = async (type: string, id: string, input: Record<string, unknown>) => {
            await client.workflow.start(type, { taskQueue, workflowId: id, args: [input] });
            legacy[type] = id;
          };
          await start('pauseWorkflow', `pause/${APP}/bob/1`, {
            appId: APP,
            accountId: 'bob',
            pause: 1,
            resumeAt: iso(-60_000),
            restorePlan: 'pro',
            pausedAt: iso(-DAY),
          });
          await start('planChangeWorkflow', `plan-change/${APP}/cy/chg_previouscy`, {
            appId: APP,
            accountId: 'cy',
            changeId: 'chg_previouscy',
            sessionId: null,
            plan: 'lite',
            expiresAt: iso(3 * 3_600_000),
          });
          await start('incentiveExpiryWorkflow', `incentive-expiry/${APP}/eve`, {
            appId: APP,
            accountId: 'eve',
            incentiveId: 'promo',
            expiresAt: iso(DAY),
          });
          await connection.close();
        },
      },
    );
  });
  after(() => stack?.close());

  const http = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${stack.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const handle = (account: string) => stack.deps.temporal.client.workflow.getHandle(accountWorkflowId(APP, account));
  const count = async (type: string) =>
    (
      await stack.query<{ n: number }>(`select count(*)::int as n from events where app_id = $1 and type = $2`, [
        APP,
        type,
      ])
    )[0].n;

  it("every account with something over time has its actor, reading the previous release's state", async () => {
    for (const a of ['ada', 'bob', 'cy', 'dee', 'eve']) {
      const state = await eventually(async () => {
        const st = await handle(a)
          .query(accountDef.queries.state)
          .catch(() => undefined);
        return st?.snapshot ? st : undefined;
      }, 60_000);
      expect(state.snapshot?.accountId, `${a}: ${JSON.stringify(state).slice(0, 400)}`).to.equal(a);
    }
    await eventually(async () => ((await stack.query(`select 1 from outbox`)).length === 0 ? true : undefined), 60_000);
    expect((await handle('bob').query(accountDef.queries.state)).nextTimer?.kind).to.equal('pause_end');
    expect((await handle('cy').query(accountDef.queries.state)).snapshot?.subscription?.pending).to.deep.include({
      id: 'chg_previouscy',
      status: 'awaiting_approval',
    });
    const dee = (await http('GET', `/apps/${APP}/namespaces/dee/subscription`)).body;
    expect(dee.scheduled_change, 'an approved change moved to its own slot').to.deep.include({
      plan: 'lite',
      status: 'scheduled',
    });
    expect(dee.pending_change).to.deep.include({ status: 'scheduled' });
    expect((await handle('eve').query(accountDef.queries.state)).nextTimer?.kind).to.equal('incentive_end');
    // A cancelled subscription has nothing over time: no actor was started for it.
    const fay = await stack.deps.temporal.client.workflow
      .getHandle(accountWorkflowId(APP, 'fay'))
      .describe()
      .catch(() => null);
    expect(fay).to.equal(null);
  });

  it("the previous release's workflows are ended without applying anything", async () => {
    for (const id of Object.values(legacy)) {
      const d = await eventually(async () => {
        const desc = await stack.deps.temporal.client.workflow.getHandle(id).describe();
        return desc.status.name === 'RUNNING' ? undefined : desc;
      }, 60_000);
      expect(['TERMINATED', 'COMPLETED'], id).to.include(d.status.name);
    }
    // The pause whose old timer had fired is still paused: only the actor resumes it, at its date.
    expect((await http('GET', `/apps/${APP}/namespaces/bob/subscription`)).body.status).to.equal('paused');
    expect(await count('subscription.resumed')).to.equal(0);
    expect((await http('GET', `/apps/${APP}/namespaces/eve`)).body.incentive).to.equal('promo');
  });

  it('their dates run once, on the app clock', async () => {
    const now = new Date((await http('GET', `/apps/${APP}/test-clock`)).body.now).getTime();
    const advanced = await http('POST', `/apps/${APP}/test-clock/advance`, {
      to: new Date(now + 3 * DAY).toISOString(),
    });
    expect(advanced.status, JSON.stringify(advanced.body)).to.equal(200);
    expect((await http('GET', `/apps/${APP}/namespaces/bob/subscription`)).body.status).to.equal('active');
    expect((await http('GET', `/apps/${APP}/namespaces/eve`)).body.incentive).to.equal(null);
    expect(
      (await http('GET', `/apps/${APP}/namespaces/cy/subscription`)).body.pending_change,
      'expired after 3 hours',
    ).to.equal(null);
    expect(await count('subscription.resumed')).to.equal(1);
    expect(await count('account.incentive_removed')).to.equal(1);
    expect(await count('subscription.change_dropped')).to.equal(1);
    // A restart of the service migrates nothing again and starts nothing twice.
    const rows = await stack.query<{ name: string }>(
      `select name from mikro_orm_migrations where name like 'Migration20261220%' order by name`,
    );
    expect(rows.map((r) => r.name)).to.deep.equal([
      'Migration20261220090000_account_actor',
      'Migration20261220100000_claim_owner',
    ]);
  });
});
