// What the example page of the drop-in components (/elements) shows after `npm start`: a real app with an offer
// to buy, a blocking limit to hit, a customer with a subscription to cancel, and the link that opens the page on
// it. Everything goes through the public API on loopback with the admin key, as an operator's script would, and
// every step first looks at what is there, so a restart (or a customer who cancelled through the example)
// leaves the app ready again rather than doubled.
import type { Logger } from '../logger.js';

/** The console's demo workspace (its seed marks the demo app with this org); used when it exists. */
export const DEMO_ORG = 'demo';
/** The org that marks the small app seeded here when there is no demo workspace. */
export const EXAMPLE_ORG = 'elements-example';
/** Who the example page shows: a free account near a limit (pricing, meter, paywall) and a subscriber. */
export const EXAMPLE_BUYER = 'elements_buyer';
export const EXAMPLE_SUBSCRIBER = 'elements_subscriber';
/** The metered entitlement whose blocking limit the paywall shows. */
const PAYWALL_ENTITLEMENT = 'exports';

export interface ElementsExample {
  appId: string;
  /** The example page on that app, with its keys, the buyer and a fresh account token in the query. */
  url: string;
  /** Whether the app is the console's demo workspace or the small one seeded here. */
  source: 'demo' | 'example';
}

export interface ExampleOptions {
  /** This API, where the seed calls it (loopback). */
  baseUrl: string;
  /** Where a person opens the page; default `baseUrl`. */
  publicUrl?: string;
  adminKey: string;
  /** The embedded PayPal stand-in: with it the subscriber buys a subscription (no money moves) and checkouts work. */
  paypal: {
    approve(approveUrl: string): Promise<string>;
    credentials: { client_id: string; client_secret: string };
  } | null;
  logger: Logger;
  /** The orgs that mark the demo and the example app (tests use their own). */
  orgs?: { demo: string; example: string };
}

interface AppRecord {
  id: string;
  api_key: string;
  public_key: string;
  checkout_url: string | null;
}

class Api {
  constructor(
    private readonly baseUrl: string,
    private readonly key: string,
  ) {}

  async call<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T | null> {
    const res = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status === 404 && method === 'GET') return null;
    if (!res.ok) throw new Error(`elements example: ${method} ${path} answered ${res.status} ${text}`);
    return (text ? JSON.parse(text) : null) as T;
  }

  /** A create that may already have happened on an earlier start: 409 is fine. */
  async ensure(path: string, body: unknown): Promise<void> {
    const res = await fetch(`${this.baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok && res.status !== 409)
      throw new Error(`elements example: POST ${path} answered ${res.status} ${await res.text()}`);
  }
}

/** The demo workspace's app when it exists, else the example app (seeded on the first start). */
async function exampleApp(
  admin: Api,
  orgs: { demo: string; example: string },
): Promise<{ app: AppRecord; source: 'demo' | 'example' }> {
  const demo = await admin.call<AppRecord[]>('GET', `/orgs/${orgs.demo}/apps`);
  if (demo?.length) return { app: demo[0], source: 'demo' };
  const mine = await admin.call<AppRecord[]>('GET', `/orgs/${orgs.example}/apps`);
  if (mine?.length) return { app: mine[0], source: 'example' };
  return { app: await seedExampleCatalog(admin, orgs.example), source: 'example' };
}

/**
 * A small app with the catalog the components show, named as the console's demo workspace names its own
 * (plans free, pro, team; metered ai_credits, notes, exports; sso; the priority_support add-on), so the same
 * top-up works on either. When the demo seed is on this branch, it replaces this function.
 */
async function seedExampleCatalog(admin: Api, org: string): Promise<AppRecord> {
  const app = (await admin.call<AppRecord>('POST', '/apps', { name: 'Acme Notes (elements example)' }))!;
  // The org first: a start that stops half way finds the app again and completes it (every step is idempotent).
  await admin.call('POST', '/orgs', { id: org, name: 'Elements example', app_ids: [app.id] });
  const a = `/apps/${app.id}`;
  for (const e of [
    { id: 'ai_credits', type: 'usage', name: 'AI credits' },
    { id: 'notes', type: 'usage', name: 'Notes' },
    { id: 'exports', type: 'usage', name: 'PDF exports' },
    { id: 'sso', type: 'boolean', name: 'Single sign-on' },
  ])
    await admin.ensure(`${a}/entitlements`, e);
  await admin.ensure(`${a}/addons`, { id: 'priority_support', name: 'Priority support' });
  const plans = [
    { id: 'free', name: 'Free', price: 0, limits: { ai_credits: 200, notes: 100, exports: 10 }, sso: false },
    { id: 'pro', name: 'Pro', price: 12, limits: { ai_credits: 3000, notes: 5000, exports: 200 }, sso: false },
    { id: 'team', name: 'Team', price: 39, limits: { ai_credits: 15000, notes: null, exports: null }, sso: true },
  ];
  for (const p of plans) {
    await admin.ensure(`${a}/plans`, {
      id: p.id,
      name: p.name,
      isFree: p.price === 0,
      description: `${p.name} plan`,
      pricingCard: { title: p.name, monthlyPrice: p.price, yearlyPrice: p.price * 10, currency: 'USD' },
    });
    for (const [id, max] of Object.entries(p.limits))
      await admin.ensure(`${a}/plans/${p.id}/entitlements`, { id, max });
    if (p.sso) await admin.ensure(`${a}/plans/${p.id}/entitlements`, { id: 'sso' });
  }
  return app;
}

/**
 * Makes sure the app has what the four components need, and returns the example page's URL: the provider
 * connected (the stand-in), the `launch` offer with an order bump, a blocking limit on exports pointing at it,
 * the `default` cancel flow, a free buyer near that limit, and a subscriber with an active subscription.
 */
export async function prepareElementsExample(opts: ExampleOptions): Promise<ElementsExample> {
  const admin = new Api(opts.baseUrl, opts.adminKey);
  const { app, source } = await exampleApp(admin, opts.orgs ?? { demo: DEMO_ORG, example: EXAMPLE_ORG });
  // The admin key, not the app's secret key: the console makes the demo app read-only for its secret key.
  const api = admin;
  const a = `/apps/${app.id}`;
  const page = new URL('/elements', opts.publicUrl ?? opts.baseUrl);

  // The provider: the stand-in when it runs (a real PayPal connection is the operator's to make).
  const connection = await api.call<{ connected: boolean }>('GET', `${a}/payments`);
  if (!connection?.connected && opts.paypal)
    await api.call('PUT', `${a}/payments`, { ...opts.paypal.credentials, env: 'sandbox' });
  const connected = !!connection?.connected || !!opts.paypal;
  // The 402's upgrade link: the example page's pricing table (the service adds offer, plan, interval, account).
  if (!app.checkout_url) {
    const pricing = new URL(page);
    pricing.search = new URLSearchParams({
      app: app.id,
      key: app.public_key,
      entitlement: PAYWALL_ENTITLEMENT,
    }).toString();
    await api.call('PATCH', a, { checkout_url: pricing.toString() });
  }

  // The offer: first-year prices on Pro and Team, bonus AI credits, and an order bump.
  const offer = await api.call<{ status: string }>('GET', `${a}/offers/launch`);
  if (!offer)
    await api.call('POST', `${a}/offers`, {
      id: 'launch',
      name: 'Launch offer',
      description: 'A quarter off for your first three months, or a year at a lower price.',
      plans: [
        {
          plan: 'pro',
          prices: [
            { interval: 'month', amount: 9, cycles: 3 },
            { interval: 'year', amount: 99 },
          ],
          extras: { entitlements: [{ id: 'ai_credits', max: 5000 }] },
        },
        {
          plan: 'team',
          prices: [
            { interval: 'month', amount: 29, cycles: 3 },
            { interval: 'year', amount: 299 },
          ],
        },
      ],
      bumps: [{ id: 'priority', name: 'Priority support', addon: 'priority_support', price: 15 }],
    });
  if (connected && offer?.status !== 'active') await api.call('POST', `${a}/offers/launch/publish`);

  // The paywall: a blocking limit whose upgrade is the offer.
  await api.call('PATCH', `${a}/entitlements/${PAYWALL_ENTITLEMENT}`, {
    overage: { mode: 'block', offer_id: 'launch' },
  });

  // The cancel flow: the service's template (reason, a save offer by reason, confirm), active.
  const flow = await api.call<{ status: string }>('GET', `${a}/cancel-flows/default`);
  if (!flow)
    await api.call('POST', `${a}/cancel-flows`, { id: 'default', name: 'Default cancel flow', status: 'active' });
  else if (flow.status !== 'active') await api.call('PATCH', `${a}/cancel-flows/default`, { status: 'active' });

  // The buyer: free, some AI credits and notes used, one export short of the limit (the second "Use one" is a 402).
  await api.ensure(`${a}/namespaces`, { id: EXAMPLE_BUYER, name: 'Example buyer', plan: 'free' });
  const buyer = (await api.call<{ plan: string }>('GET', `${a}/namespaces/${EXAMPLE_BUYER}`))!;
  if (buyer.plan === 'free')
    for (const [entitlement, target] of [
      ['ai_credits', 140],
      ['notes', 35],
      [PAYWALL_ENTITLEMENT, 9],
    ] as const) {
      const used = await api.call<{ count: number }>('GET', `${a}/namespaces/${EXAMPLE_BUYER}/usage/${entitlement}`);
      const missing = target - (used?.count ?? 0);
      if (missing > 0)
        await api.call('POST', `${a}/namespaces/${EXAMPLE_BUYER}/usage/${entitlement}/amount`, { amount: missing });
    }

  // The subscriber: an active Pro subscription bought through the stand-in (again after an example cancel).
  await api.ensure(`${a}/namespaces`, { id: EXAMPLE_SUBSCRIBER, name: 'Example subscriber', plan: 'free' });
  if (opts.paypal) await ensureSubscription(api, a, opts.paypal, page.toString(), opts.logger);

  const token = (await api.call<{ token: string }>('POST', `${a}/namespaces/${EXAMPLE_SUBSCRIBER}/token`, {
    ttl_seconds: 86_400,
  }))!.token;
  page.search = new URLSearchParams({
    app: app.id,
    key: app.public_key,
    account: EXAMPLE_BUYER,
    account_token: token,
    offer: 'launch',
    entitlement: PAYWALL_ENTITLEMENT,
  }).toString();
  return { appId: app.id, url: page.toString(), source };
}

async function ensureSubscription(
  api: Api,
  a: string,
  paypal: NonNullable<ExampleOptions['paypal']>,
  returnUrl: string,
  logger: Logger,
) {
  const sub = await api.call<{ status: string }>('GET', `${a}/namespaces/${EXAMPLE_SUBSCRIBER}/subscription`);
  if (sub?.status === 'active') return;
  if (sub?.status === 'paused') {
    await api.call('POST', `${a}/namespaces/${EXAMPLE_SUBSCRIBER}/subscription/resume`);
    return;
  }
  const checkout = (await api.call<{ id: string; approve_url: string }>('POST', `${a}/offers/launch/checkout`, {
    plan: 'pro',
    interval: 'month',
    account: EXAMPLE_SUBSCRIBER,
    return_url: returnUrl,
  }))!;
  await paypal.approve(checkout.approve_url);
  // The stand-in activates the subscription a moment after the approval; complete answers `created` until then.
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const c = await api.call<{ status: string }>('POST', `${a}/checkouts/${checkout.id}/complete`);
    if (c?.status === 'completed') return;
    await new Promise((r) => setTimeout(r, 1000));
  }
  logger.warn({ checkout: checkout.id }, 'elements example: the subscriber checkout did not complete in time');
}
