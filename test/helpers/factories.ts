import { expect } from 'chai';
import { call, patch, post } from './http.js';
import type { PayPalStandIn } from '../../src/dev/paypal-standin.js';
import { testEnv } from './servers.js';
import { eventually } from './wait.js';

export interface TestApp {
  id: string;
  name: string;
  api_key: string;
  public_key: string;
}

let n = 0;

/** A fresh app (tenant) per test, so tests never see each other's records. */
export async function createTestApp(name = `Test app ${++n}`): Promise<TestApp> {
  const res = await post<TestApp>('/apps', testEnv().adminKey, { name });
  expect(res.status, res.text).to.equal(201);
  return res.body;
}

/**
 * A small catalog: entitlements api_calls (usage), seats (usage, blocking), sso and beta (boolean);
 * add-ons priority and storage; plans free (free, 100 calls, 1 seat), pro ($29/month: 1,000 calls,
 * 5 seats, sso, priority), scale ($99/month: unlimited calls, 50 seats, sso), internal (no card).
 */
export async function seedCatalog(app: TestApp): Promise<void> {
  const base = `/apps/${app.id}`;
  const ok = async (path: string, body: unknown) => {
    const res = await post(`${base}${path}`, app.api_key, body);
    expect(res.status, `${path} ${res.text}`).to.equal(201);
  };
  await ok('/entitlements', { id: 'api_calls', type: 'usage', name: 'API calls' });
  await ok('/entitlements', { id: 'seats', type: 'usage', name: 'Seats', overage: { mode: 'block' } });
  await ok('/entitlements', { id: 'sso', type: 'boolean', name: 'SSO' });
  await ok('/entitlements', { id: 'beta', type: 'boolean', name: 'Beta features' });
  await ok('/addons', { id: 'priority', name: 'Priority support' });
  await ok('/addons', { id: 'storage', name: 'Extra storage' });
  await ok('/plans', { id: 'free', name: 'Free', isFree: true, pricingCard: { title: 'Free', monthlyPrice: 0 } });
  await ok('/plans/free/entitlements', { id: 'api_calls', max: 100 });
  await ok('/plans/free/entitlements', { id: 'seats', max: 1 });
  await ok('/plans', {
    id: 'pro',
    name: 'Pro',
    pricingCard: { monthlyPrice: 29, yearlyPrice: 290, currency: 'USD' },
    meta: { color: 'blue', cost: 7 },
    privateMetaKeys: ['cost'],
  });
  await ok('/plans/pro/entitlements', { id: 'api_calls', max: 1000 });
  await ok('/plans/pro/entitlements', { id: 'seats', max: 5 });
  await ok('/plans/pro/entitlements', { id: 'sso' });
  await ok('/plans/pro/addons', { id: 'priority' });
  await ok('/plans', { id: 'scale', name: 'Scale', pricingCard: { monthlyPrice: 99, currency: 'USD' } });
  await ok('/plans/scale/entitlements', { id: 'api_calls', max: null });
  await ok('/plans/scale/entitlements', { id: 'seats', max: 50 });
  await ok('/plans/scale/entitlements', { id: 'sso' });
  await ok('/plans', { id: 'internal', name: 'Internal' });
  await ok('/plans/internal/entitlements', { id: 'seats', max: 1000 });
}

export async function createAccount(app: TestApp, body: Record<string, unknown>) {
  const res = await post(`/apps/${app.id}/namespaces`, app.api_key, body);
  expect(res.status, res.text).to.equal(201);
  return res.body;
}

/**
 * The PayPal client (REST app) of a test app at the stand-in. PayPal sends a client's notifications to every webhook
 * registered for it, as it would to two offerkit apps sharing one REST app; with one client for the whole suite,
 * each event went to every app connected so far (2,226 notifications instead of 100 in three billing files, a
 * third of their CPU). A client per app keeps each app's notifications its own.
 */
export function paypalClientOf(app: { id: string }) {
  return { client_id: `sandbox-client-${app.id}`, client_secret: 'sandbox-secret' };
}

/**
 * Connects the app to the PayPal stand-in the test servers run (or `paypal`, a stand-in of the test's own that the
 * service it calls is pointed at), with a PayPal client of its own.
 */
export async function connectProvider(app: TestApp, paypal: Pick<PayPalStandIn, 'addCredentials'> = testEnv().paypal) {
  const { client_id, client_secret } = paypalClientOf(app);
  paypal.addCredentials(client_id, client_secret);
  const res = await call('PUT', `/apps/${app.id}/payments`, {
    token: app.api_key,
    body: { client_id, client_secret, env: 'sandbox' },
  });
  expect(res.status, res.text).to.equal(200);
  return res;
}

/** An app and the path of its routes (`/apps/:appId`). */
export interface SeededApp {
  app: TestApp;
  base: string;
}

/**
 * The set-up most API tests start from: a fresh app with the small catalog (seedCatalog), then `accounts` created
 * in order (each a body for POST /namespaces, such as `{ id: 'a1', plan: 'pro' }`).
 */
export async function seededApp(
  opts: { name?: string; accounts?: Record<string, unknown>[] } = {},
): Promise<SeededApp> {
  const app = await createTestApp(opts.name);
  await seedCatalog(app);
  for (const account of opts.accounts ?? []) await createAccount(app, account);
  return { app, base: `/apps/${app.id}` };
}

/** Sells through the PayPal stand-in: the provider connected and the app's checkout URL (where buyers come back) set. */
export async function connectBilling(
  app: TestApp,
  paypal: Pick<PayPalStandIn, 'addCredentials'> = testEnv().paypal,
): Promise<void> {
  await connectProvider(app, paypal);
  const res = await patch(`/apps/${app.id}`, app.api_key, { checkout_url: 'https://shop.example/pricing' });
  expect(res.status, res.text).to.equal(200);
}

/** Creates an offer (a body for POST /offers) and publishes it. */
export async function publishOffer(app: TestApp, offer: { id: string } & Record<string, unknown>): Promise<void> {
  const base = `/apps/${app.id}`;
  const made = await post(`${base}/offers`, app.api_key, offer);
  expect(made.status, made.text).to.equal(201);
  const published = await post(`${base}/offers/${encodeURIComponent(offer.id)}/publish`, app.api_key);
  expect(published.status, published.text).to.equal(200);
}

/**
 * The billing tests' set-up: a seeded app with `accounts`, selling through the PayPal stand-in (connectBilling),
 * then `offer` published if given, then plan pro bought (as `purchase` does) for each account in `purchases`.
 */
export async function billingApp(
  opts: {
    accounts?: Record<string, unknown>[];
    offer?: { id: string } & Record<string, unknown>;
    purchases?: string[];
  } = {},
): Promise<SeededApp> {
  const seeded = await seededApp({ accounts: opts.accounts });
  await connectBilling(seeded.app);
  if (opts.offer) await publishOffer(seeded.app, opts.offer);
  for (const account of opts.purchases ?? []) await buyLaunch(seeded.app, account);
  return seeded;
}

/**
 * Buys plan pro ($19/month through offer `launch`) for an account as a customer would: connects the
 * provider, publishes the offer, approves at the PayPal stand-in, and waits for the completion.
 */
export async function purchase(app: TestApp, accountId: string) {
  await connectBilling(app);
  return buyLaunch(app, accountId);
}

/** `purchase` on an app already selling (connectBilling): publishes offer `launch` the first time. */
async function buyLaunch(app: TestApp, accountId: string) {
  const base = `/apps/${app.id}`;
  if ((await call('GET', `${base}/offers/launch`, { token: app.api_key })).status === 404) {
    await post(`${base}/offers`, app.api_key, {
      id: 'launch',
      name: 'Launch',
      plans: [{ plan: 'pro', prices: [{ interval: 'month', amount: 19 }] }],
    });
    await post(`${base}/offers/launch/publish`, app.api_key);
  }
  const chk = (
    await post(`${base}/offers/launch/checkout`, app.public_key, { plan: 'pro', interval: 'month', account: accountId })
  ).body;
  await testEnv().paypal.approve(chk.approve_url);
  await eventually(
    async () => (await post(`${base}/checkouts/${chk.id}/complete`, app.public_key)).body.status === 'completed',
  );
  return chk;
}
