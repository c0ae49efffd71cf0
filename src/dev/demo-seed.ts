// The demo workspace: on first start (DEMO_WORKSPACE, on by default outside production) one app filled
// with realistic data through the public API, so a newcomer sees populated pages at once. The spec's org
// `demo` holds it; writes with its secret key get 403 (src/console-api/console.ts).
import { LimitReachedError, PublishableClient, SecretClient } from '@offerkit/sdk';
import type { Logger } from '../logger.js';
import { DEMO_WORKSPACE_ID } from '../people/workspaces.js';
import { demoReceiverUrl, parseDemoReceiverPath } from './demo-receiver.js';

const DAY = 86_400_000;

/** A small seeded generator, so every demo looks the same. */
function rng(seed: number) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FIRST = ['Ada', 'Bea', 'Cyrus', 'Dina', 'Emil', 'Farah', 'Gus', 'Hana', 'Ivo', 'Jun', 'Kira', 'Lars', 'Mina'];
const LAST = ['Park', 'Silva', 'Novak', 'Okafor', 'Berg', 'Rossi', 'Tanaka', 'Haddad', 'Costa', 'Meyer', 'Dubois'];
const COMPANY = ['Studio', 'Labs', 'Works', 'Collective', 'Press', 'Analytics', 'Cloud', 'Design', 'Foods', 'Health'];

export interface DemoResult {
  appId: string;
  created: boolean;
}

export interface DemoOptions {
  /**
   * The local PayPal stand-in: credentials it accepts and a way to click its approval links as a buyer would.
   * Without it (a real PayPal account, or none) offers stay drafts and no checkouts are made.
   */
  paypal?: {
    credentials: { client_id: string; client_secret: string };
    approve: (approveUrl: string) => Promise<string>;
  };
  /** Where the service's own demo webhook receiver is reached (default `baseUrl`). */
  receiverOrigin?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Creates the demo workspace unless it exists. `baseUrl` is this API (loopback), `adminKey` its admin key.
 */
export async function seedDemo(
  baseUrl: string,
  adminKey: string,
  logger: Logger,
  opts: DemoOptions = {},
): Promise<DemoResult> {
  const call = async <T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`demo seed: ${method} ${path} answered ${res.status} ${text}`);
    return (text ? JSON.parse(text) : null) as T;
  };
  const existing = await fetch(`${baseUrl}/orgs/${DEMO_WORKSPACE_ID}`, {
    headers: { authorization: `Bearer ${adminKey}` },
  });
  if (existing.ok) {
    const org = (await existing.json()) as { app_ids: string[] };
    await repointReceiver(opts.receiverOrigin ?? baseUrl, adminKey, org.app_ids[0], call, logger).catch((err) =>
      logger.warn({ err: (err as Error).message }, 'demo: webhook endpoints not pointed at the demo receiver'),
    );
    return { appId: org.app_ids[0], created: false };
  }

  const random = rng(42);
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)];
  const now = Date.now();

  const app = await call<{ id: string }>('POST', '/apps', { name: 'Acme Notes (demo)' });
  const a = `/apps/${app.id}`;
  // No checkout_url of its own: the example page of the drop-in components (src/dev/elements-example.ts) makes its
  // pricing table the demo's upgrade link, so a paywall's link leads somewhere that works offline.

  // Catalog: three plans, three metered features, two switches, an add-on and a launch incentive.
  const ents = [
    { id: 'ai_credits', type: 'usage', name: 'AI credits', description: 'Summaries and rewrites' },
    { id: 'notes', type: 'usage', name: 'Notes', description: 'Notes stored' },
    { id: 'exports', type: 'usage', name: 'PDF exports' },
    { id: 'sso', type: 'boolean', name: 'Single sign-on' },
    { id: 'api_access', type: 'boolean', name: 'API access' },
  ];
  for (const e of ents) await call('POST', `${a}/entitlements`, e);
  await call('POST', `${a}/addons`, { id: 'priority_support', name: 'Priority support' });
  const plans = [
    {
      id: 'free',
      name: 'Free',
      isFree: true,
      price: 0,
      limits: { ai_credits: 200, notes: 100, exports: 10 },
      flags: [],
    },
    {
      id: 'pro',
      name: 'Pro',
      price: 12,
      limits: { ai_credits: 3000, notes: 5000, exports: 200 },
      flags: ['api_access'],
    },
    {
      id: 'team',
      name: 'Team',
      price: 39,
      limits: { ai_credits: 15000, notes: null, exports: null },
      flags: ['api_access', 'sso'],
    },
  ] as const;
  for (const p of plans) {
    await call('POST', `${a}/plans`, {
      id: p.id,
      name: p.name,
      isFree: 'isFree' in p ? p.isFree : false,
      description: `${p.name} plan`,
      pricingCard: {
        title: p.name,
        monthlyPrice: p.price,
        yearlyPrice: p.price * 10,
        currency: 'USD',
        isFree: p.price === 0,
      },
    });
    for (const [id, max] of Object.entries(p.limits))
      await call('POST', `${a}/plans/${p.id}/entitlements`, { id, max });
    for (const id of p.flags) await call('POST', `${a}/plans/${p.id}/entitlements`, { id });
    if (p.id === 'team') await call('POST', `${a}/plans/team/addons`, { id: 'priority_support' });
  }
  await call('PATCH', `${a}/plans/pro/meta`, { meta: { stripe_price: 'price_demo_pro', badge: 'Most popular' } });
  await call('PATCH', `${a}/plans/pro`, { privateMetaKeys: ['stripe_price'] });
  await call('POST', `${a}/incentives`, {
    id: 'launch_promo',
    name: 'Launch promo',
    description: 'Double AI credits for early adopters',
    entitlements: [{ id: 'ai_credits', max: 6000 }],
    addons: ['priority_support'],
  });
  await call('POST', `${a}/analytics/reports`, {
    name: 'AI credits, last 30 days',
    entitlements: ['ai_credits'],
    interval: '30d',
  });

  // A few hundred accounts over 60 days, with 60 days of usage history.
  const limitsOf = Object.fromEntries(plans.map((p) => [p.id, p.limits as Record<string, number | null>]));
  const accounts = Array.from({ length: 320 }, (_, i) => {
    const r = random();
    const plan = r < 0.62 ? 'free' : r < 0.9 ? 'pro' : 'team';
    const name = `${pick(FIRST)} ${pick(LAST)}`;
    const promo = plan === 'pro' && random() < 0.15;
    return {
      id: `acct_${String(1000 + i)}`,
      name: i % 3 === 0 ? `${pick(LAST)} ${pick(COMPANY)}` : name,
      plan,
      incentive: promo ? 'launch_promo' : null,
      incentive_expires_at: promo ? new Date(now + (10 + Math.floor(random() * 50)) * DAY).toISOString() : null,
      created_at: new Date(now - (1 + Math.floor(random() * 59)) * DAY - Math.floor(random() * DAY)).toISOString(),
    };
  });
  const usage: { account_id: string; entitlement_id: string; amount: number; created_at: string }[] = [];
  for (const acc of accounts) {
    const start = Date.parse(acc.created_at);
    const days = Math.max(1, Math.floor((now - start) / DAY));
    const activity = 0.2 + random() * 0.8; // how busy this customer is
    for (const [ent, max] of Object.entries(limitsOf[acc.plan])) {
      const budget = (max ?? 8000) * activity * (0.3 + random() * 0.75);
      const n = Math.min(days, 12);
      for (let k = 0; k < n; k++) {
        const at = start + Math.floor(random() * (now - start - 60_000));
        usage.push({
          account_id: acc.id,
          entitlement_id: ent,
          amount: Math.max(1, Math.round(budget / n)),
          created_at: new Date(at).toISOString(),
        });
      }
    }
  }
  // Growth: more usage lately.
  await call('POST', `${a}/import`, { accounts, usage: usage.slice(0, 10_000) });
  if (usage.length > 10_000) await call('POST', `${a}/import`, { accounts: [], usage: usage.slice(10_000, 20_000) });

  // Webhooks: two endpoints at the service's own demo receiver (src/dev/demo-receiver.ts), so the changes
  // below leave a delivery log with no internet: one takes every event, the other refuses each message's first
  // attempt (its deliveries succeed on the retry a minute later).
  await call('POST', `${a}/webhooks`, {
    url: demoReceiverUrl(opts.receiverOrigin ?? baseUrl, adminKey, app.id, 'ok'),
    events: ['*'],
    description: 'Billing worker (the built-in demo receiver)',
  });
  const flaky = await call<{ id: string }>('POST', `${a}/webhooks`, {
    url: demoReceiverUrl(opts.receiverOrigin ?? baseUrl, adminKey, app.id, 'flaky'),
    events: ['checkout.completed'],
    description: 'Analytics warehouse (answers 503 to each first attempt)',
  });
  // Recent changes produce events and deliveries.
  for (const acc of accounts.slice(0, 8)) {
    await call('PATCH', `${a}/namespaces/${acc.id}`, { plan: acc.plan === 'free' ? 'pro' : 'team' });
  }
  await call('POST', `${a}/namespaces`, { id: 'acct_new_signup', name: 'New signup', plan: 'free' });
  await call('POST', `${a}/namespaces/acct_new_signup/usage/ai_credits/amount`, { amount: 170 });

  // Cancel flow from the template, active, with a few sessions.
  await call('POST', `${a}/cancel-flows`, { id: 'default', name: 'Default cancel flow', status: 'active' });
  const appKeys = await call<{ public_key: string }>('GET', a);
  await offersAndCheckouts({
    sdk: new SecretClient({ secretKey: adminKey, appId: app.id, baseUrl }),
    pub: new PublishableClient({ publishableKey: appKeys.public_key, appId: app.id, baseUrl }),
    buyers: accounts.filter((x) => x.plan === 'free').map((x) => x.id),
    random,
    logger,
    opts,
  });
  for (const acc of accounts.filter((x) => x.plan !== 'free').slice(0, 6)) {
    const s = await call<{ id: string }>('POST', `${a}/cancel-sessions`, { flow: 'default', account: acc.id });
    await call('POST', `${a}/cancel-sessions/${s.id}/close`);
  }

  // A failed delivery to retry from the console: a test send is a single attempt, refused by the flaky receiver.
  await call('POST', `${a}/webhooks/${flaky.id}/test`, {});

  await call('POST', '/orgs', { id: DEMO_WORKSPACE_ID, name: 'Demo', app_ids: [app.id] });
  logger.info({ app: app.id, accounts: accounts.length, usage: usage.length }, 'created the demo workspace');
  return { appId: app.id, created: true };
}

/**
 * The demo receiver's URL holds this service's loopback port and a token keyed with the admin key: after a start on
 * another port or with another admin key, the demo's endpoints are pointed at the receiver's URL as it is now.
 */
async function repointReceiver(
  origin: string,
  adminKey: string,
  appId: string | undefined,
  call: <T>(method: string, path: string, body?: unknown) => Promise<T>,
  logger: Logger,
) {
  if (!appId) return;
  const endpoints = await call<{ id: string; url: string }[]>('GET', `/apps/${appId}/webhooks`);
  for (const e of endpoints) {
    let pathname: string;
    try {
      pathname = new URL(e.url).pathname;
    } catch {
      continue;
    }
    const at = parseDemoReceiverPath(pathname);
    if (!at || at.appId !== appId) continue;
    const current = demoReceiverUrl(origin, adminKey, appId, at.mode);
    if (e.url !== current) {
      await call('PATCH', `/apps/${appId}/webhooks/${e.id}`, { url: current });
      logger.info({ endpoint: e.id }, 'demo: webhook endpoint pointed at the demo receiver of this start');
    }
  }
}

/**
 * Offers with views and completed checkouts at the payment provider, and cancel sessions of paying customers that
 * were saved, cancelled or abandoned: the offer funnel and the cancel-flow stats have something to show.
 */
async function offersAndCheckouts(input: {
  sdk: SecretClient;
  pub: PublishableClient;
  buyers: string[];
  random: () => number;
  logger: Logger;
  opts: DemoOptions;
}) {
  const { sdk, pub, buyers, random, logger, opts } = input;
  await sdk.offers.create({
    id: 'spring_sale',
    name: 'Spring sale',
    description: "Pro for less, with double PDF exports; Team at last year's price",
    plans: [
      {
        plan: 'pro',
        prices: [
          { interval: 'month', amount: 9, currency: 'USD' },
          { interval: 'year', amount: 90, currency: 'USD' },
        ],
        extras: { entitlements: [{ id: 'exports', max: 400 }], addons: [] },
      },
      { plan: 'team', prices: [{ interval: 'month', amount: 29, currency: 'USD' }] },
    ],
    bumps: [{ id: 'support', name: 'Priority support', addon: 'priority_support', price: 5, currency: 'USD' }],
  });
  await sdk.offers.create({
    id: 'go_annual',
    name: 'Go annual',
    description: 'Two months free when you pay yearly (draft: not published yet)',
    plans: [{ plan: 'pro', prices: [{ interval: 'year', amount: 100, currency: 'USD' }] }],
  });
  if (!opts.paypal) {
    logger.info('demo: no local payment provider, so the offers stay drafts and no checkouts are made');
    return;
  }
  await sdk.payments.connect({ ...opts.paypal.credentials, env: 'sandbox' });
  await sdk.offers.publish('spring_sale');

  // Visitors: views of the public offer from three campaigns.
  const refs = ['newsletter', 'twitter', 'pricing_page'];
  for (let i = 0; i < 48; i++) await pub.offers.getPublic('spring_sale', { ref: refs[i % refs.length] });

  // Buyers: most approve at the provider and complete; a few leave the approval page (open checkouts).
  const paid: string[] = [];
  for (let i = 0; i < 10; i++) {
    const account = buyers[i];
    const checkout = await pub.offers.checkout('spring_sale', {
      plan: i % 4 === 3 ? 'team' : 'pro',
      interval: i % 5 === 0 && i % 4 !== 3 ? 'year' : 'month',
      account,
      ref: refs[Math.floor(random() * refs.length)],
      bumps: i % 3 === 0 ? ['support'] : [],
      return_url: 'https://acme-notes.example.com/thanks',
      cancel_url: 'https://acme-notes.example.com/pricing',
    });
    if (checkout.object === 'plan_change') throw new Error(`demo buyer ${account} already had a subscription`); // never asked
    if (i >= 8) {
      // Opened the approval page (through the service, so the offer funnel counts it) and left.
      if (checkout.open_url)
        await fetch(checkout.open_url, { redirect: 'manual', signal: AbortSignal.timeout(10_000) });
      continue;
    }
    await opts.paypal.approve(checkout.approve_url!);
    if (checkout.bump_approve_url) await opts.paypal.approve(checkout.bump_approve_url);
    // The provider activates the subscription a moment after approval.
    for (let t = 0; t < 40; t++) {
      const c = await pub.checkouts.complete(checkout.id);
      if (c.status === 'completed') {
        paid.push(account);
        break;
      }
      await sleep(250);
    }
  }

  const upgrades = await limitUpgrades(sdk, pub, buyers.slice(10, 16), opts.paypal.approve);

  // Cancel sessions of paying customers: a discount accepted, a pause accepted, two who cancel anyway.
  const walks: { answer: string; text?: string; then: 'accept' | 'cancel' }[] = [
    { answer: 'too_expensive', then: 'accept' },
    { answer: 'not_using', then: 'accept' },
    { answer: 'missing_features', then: 'cancel' },
    { answer: 'other', text: 'We moved to a competitor with offline mode', then: 'cancel' },
  ];
  for (const [i, walk] of walks.entries()) {
    const account = paid[i];
    if (!account) break;
    const s = await sdk.cancelSessions.start({ flow: 'default', account });
    const atOffer = await sdk.cancelSessions.answer(s.id, { step: 'reason', answer: walk.answer, text: walk.text });
    if (walk.then === 'accept' && atOffer.step?.type === 'offer') {
      const accepted = await sdk.cancelSessions.accept(s.id, { return_url: 'https://acme-notes.example.com/account' });
      // A discount is a save once the customer approves it at the provider (until then the session is pending).
      if (accepted.approve_url) {
        await opts.paypal.approve(accepted.approve_url);
        for (let t = 0; t < 40 && (await sdk.cancelSessions.get(s.id)).status === 'pending'; t++) await sleep(250);
      }
      continue;
    }
    const atConfirm = atOffer.step?.type === 'offer' ? await sdk.cancelSessions.decline(s.id) : atOffer;
    if (atConfirm.step?.type === 'confirm') await sdk.cancelSessions.cancel(s.id);
  }
  logger.info({ checkouts: paid.length, upgrades }, 'demo: offers, checkouts and cancel sessions created');
}

/**
 * The 402 upgrade funnel: PDF exports now stop at the free plan's limit and offer the spring sale's Pro. Each of
 * `accounts` goes past it (a 402 with its upgrade link); the first three open the link, the first two pay.
 */
async function limitUpgrades(
  sdk: SecretClient,
  pub: PublishableClient,
  accounts: string[],
  approve: (approveUrl: string) => Promise<string>,
): Promise<number> {
  await sdk.entitlements.update('exports', { overage: { mode: 'block', offer_id: 'spring_sale' } });
  let paid = 0;
  for (const [i, account] of accounts.entries()) {
    const refused = await sdk.usage.addAmount(account, 'exports', { amount: 25 }).then(
      () => null,
      (err: unknown) => err,
    );
    const link = refused instanceof LimitReachedError ? refused.offer?.checkout_url : null;
    if (!link) throw new Error(`demo: ${account} past its export limit got no upgrade link (${String(refused)})`);
    if (i >= 3) continue; // saw the upgrade, did not open it
    const opened = await fetch(link, { redirect: 'manual', signal: AbortSignal.timeout(10_000) });
    const approveUrl = opened.headers.get('location');
    if (i >= 2 || !approveUrl) continue; // opened the approval page and left
    await approve(approveUrl);
    const id = /\/checkouts\/([^/]+)\/open/.exec(new URL(link).pathname)?.[1];
    if (!id) throw new Error(`demo: no checkout in the upgrade link ${link}`);
    for (let t = 0; t < 40; t++) {
      if ((await pub.checkouts.complete(id)).status === 'completed') {
        paid++;
        break;
      }
      await sleep(250);
    }
  }
  return paid;
}
