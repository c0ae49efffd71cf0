// The scenario of `npm run topology`: a client that retries what got no answer, the app it sets up (a catalog, a
// webhook to the receiver, PayPal, an offer), the faults (one history service, one worker and one API process SIGKILLed
// and restarted at random points, replayable with TOPOLOGY_SEED), and the writes: checkouts approved at the stand-in,
// a burst of account creations and usage adds, pauses, and the app's test clock moved on to end them.
import pg from 'pg';
import { PayPalStandIn } from '../src/dev/paypal-standin.js';
import { Proc } from './procs.js';
import type { Cluster } from './topology-temporal.js';
import { ADMIN, FAULTS, PAYPAL, SETTINGS, say, sleep } from './topology-settings.js';

export interface Ack {
  status: number;
  tries: number;
}

/** A small deterministic random source, so a run's fault times can be replayed with TOPOLOGY_SEED. */
function random(seed: number) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

/** The client: retries what got no answer, with the same request (and key), until it is acknowledged. */
export function apiClient(base: string) {
  const once = async (method: string, p: string, token: string, body?: unknown, key?: string) => {
    const res = await fetch(base + p, {
      method,
      headers: {
        Authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
        ...(key ? { 'Idempotency-Key': key } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = text;
    }
    return { status: res.status, body: parsed as Record<string, unknown> };
  };
  /** Sends until answered with something other than a 5xx; a retry's 409 means the first one was applied. */
  const send = async (method: string, p: string, token: string, body?: unknown, key?: string): Promise<Ack> => {
    for (let tries = 1; ; tries++) {
      try {
        const res = await once(method, p, token, body, key);
        if (res.status < 500) return { status: res.status, tries };
      } catch {
        /* the connection failed or was cut (the API process was killed): send it again */
      }
      if (tries > 200) return { status: 0, tries };
      await sleep(250);
    }
  };
  const must = async (method: string, p: string, token: string, body?: unknown) => {
    const res = await once(method, p, token, body);
    if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  return { once, send, must };
}

export type ApiClient = ReturnType<typeof apiClient>;

/** The app: a free and a paid plan, an incentive, a webhook to the receiver, PayPal at the stand-in, an offer. */
export async function setUpApp({ must }: ApiClient, receiverUrl: string) {
  const app = (await must('POST', '/apps', ADMIN, { name: 'topology' })) as { id: string; api_key: string };
  const key = app.api_key;
  const A = `/apps/${app.id}`;
  await must('POST', `${A}/entitlements`, key, { id: 'calls', type: 'usage', name: 'Calls' });
  await must('POST', `${A}/plans`, key, { id: 'free', name: 'Free', isFree: true });
  await must('POST', `${A}/plans/free/entitlements`, key, { id: 'calls', max: null });
  await must('POST', `${A}/plans`, key, {
    id: 'pro',
    name: 'Pro',
    pricingCard: { monthlyPrice: 10, currency: 'USD' },
  });
  await must('POST', `${A}/plans/pro/entitlements`, key, { id: 'calls', max: null });
  await must('POST', `${A}/incentives`, key, { id: 'promo', name: 'Promo' });
  await must('POST', `${A}/webhooks`, key, {
    url: receiverUrl,
    events: [
      'account.created',
      'account.incentive_removed',
      'checkout.completed',
      'subscription.paused',
      'subscription.resumed',
    ],
  });
  await must('PUT', `${A}/payments`, key, { ...PAYPAL, env: 'sandbox' });
  await must('PATCH', A, key, { checkout_url: 'https://shop.example/pricing' });
  await must('POST', `${A}/offers`, key, {
    id: 'launch',
    name: 'Launch',
    plans: [{ plan: 'pro', prices: [{ interval: 'month', amount: 5 }] }],
  });
  await must('POST', `${A}/offers/launch/publish`, key);
  return { app, key, A };
}

/**
 * The faults (with FAULTS): a history service, a worker and an API process, each SIGKILLed at a random point of the
 * burst and started again a few seconds later. The burst starts with them.
 */
export function startFaults(cluster: Cluster, workers: Proc[], apis: Proc[]) {
  const rand = random(SETTINGS.seed);
  const faults: string[] = [];
  const burstS = Math.max(10, Math.round((SETTINGS.accounts + SETTINGS.usage) / 60));
  let lastRestart = 0;
  const faultRuns: Promise<void>[] = [];
  const history = cluster.procs.filter((p) => p.name.startsWith('history'));
  const victims: [string, Proc][] = FAULTS
    ? [
        ['history', history[Math.floor(rand() * history.length)]],
        ['worker', workers[Math.floor(rand() * workers.length)]],
        ['api', apis[Math.floor(rand() * apis.length)]],
      ]
    : [];
  const burstStart = Date.now();
  for (const [, proc] of victims) {
    const at = 1000 + rand() * burstS * 1000;
    const downFor = 2000 + rand() * 6000;
    faultRuns.push(
      (async () => {
        await sleep(at);
        await proc.kill('SIGKILL');
        const killedAt = Date.now();
        await sleep(downFor);
        await proc.start();
        lastRestart = Math.max(lastRestart, Date.now());
        faults.push(
          `${proc.name} SIGKILLed at +${((killedAt - burstStart) / 1000).toFixed(1)} s, ` +
            `restarted after ${((Date.now() - killedAt) / 1000).toFixed(1)} s (ready again)`,
        );
      })(),
    );
  }

  return {
    burstStart,
    /** Resolves when every fault ran (each process started again); says what happened. */
    done: async () => {
      await Promise.all(faultRuns);
      for (const f of faults) say(`fault: ${f}`);
    },
    lastRestart: () => lastRestart,
  };
}

/**
 * The writes: buyers' checkouts approved at the stand-in, the accounts (each with an incentive expiring on a short
 * timer) and usage adds, then each buyer's subscription paused once its checkout completed; after the faults, the
 * app's test clock moved a month on so the pauses end.
 */
export async function runScenario(
  { once, send }: ApiClient,
  { app, key, A }: Awaited<ReturnType<typeof setUpApp>>,
  faults: ReturnType<typeof startFaults>,
  paypal: PayPalStandIn,
  db: pg.Pool,
) {
  const { burstStart } = faults;
  const expiresAt = new Date(burstStart + SETTINGS.expiryS * 1000);
  type Job = () => Promise<void>;
  const acks = { accounts: [] as Ack[], usage: [] as Ack[], checkouts: [] as Ack[], pauses: [] as Ack[] };
  const jobs: Job[] = [];
  const accountIds = Array.from({ length: SETTINGS.accounts }, (_, i) => `a${i}`);
  for (const id of accountIds)
    jobs.push(async () => {
      acks.accounts.push(
        await send('POST', `${A}/namespaces`, key, {
          id,
          plan: 'free',
          incentive: 'promo',
          incentive_expires_at: expiresAt.toISOString(),
        }),
      );
    });
  // Usage adds on the first accounts once they exist: `Idempotency-Key` makes a retried add count once.
  const usageAccounts = accountIds.slice(0, Math.min(20, accountIds.length));
  const runJobs = async (list: Job[]) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: SETTINGS.concurrency }, async () => {
        for (let j = next++; j < list.length; j = next++) await list[j]();
      }),
    );
  };
  const buyers = Array.from({ length: SETTINGS.checkouts }, (_, i) => `b${i}`);
  const checkoutIds: string[] = [];
  const approveUrls: string[] = [];
  // Buyers first (their checkouts then take their time at the provider), then the accounts and usage.
  await runJobs(
    buyers.map((b) => async () => {
      await send('POST', `${A}/namespaces`, key, { id: b, plan: 'free' });
      for (let tries = 0; ; tries++) {
        const res = await once('POST', `${A}/offers/launch/checkout`, key, {
          plan: 'pro',
          interval: 'month',
          account: b,
        }).catch(() => null);
        if (res && res.status === 201) {
          checkoutIds.push(String(res.body.id));
          approveUrls.push(String(res.body.approve_url));
          acks.checkouts.push({ status: 201, tries: tries + 1 });
          return;
        }
        if (tries > 200) throw new Error(`checkout for ${b} never opened: ${res?.status}`);
        await sleep(250);
      }
    }),
  );
  for (const url of approveUrls) await paypal.approve(url);
  await runJobs(jobs);
  const usageJobs: Job[] = Array.from({ length: SETTINGS.usage }, (_, i) => async () => {
    const account = usageAccounts[i % usageAccounts.length];
    acks.usage.push(
      await send('POST', `${A}/namespaces/${account}/usage/calls/add`, key, undefined, `topology-usage-${i}`),
    );
  });
  await runJobs(usageJobs);
  const burstEnd = Date.now();
  say(
    `burst: ${SETTINGS.accounts} accounts, ${SETTINGS.usage} usage adds, ${SETTINGS.checkouts} checkouts approved ` +
      `in ${((burstEnd - burstStart) / 1000).toFixed(1)} s`,
  );

  // Pauses: each buyer's subscription once its checkout completed (the checkout workflow applied it).
  const pausedAt = new Map<string, number>();
  const pauseJobs = async () => {
    const end = Date.now() + SETTINGS.convergeS * 1000;
    while (pausedAt.size < buyers.length && Date.now() < end) {
      const active = (
        await db.query(
          `select account_id from subscriptions where app_id = $1 and status = 'active' and paused_at is null`,
          [app.id],
        )
      ).rows.map((r: { account_id: string }) => r.account_id);
      await runJobs(
        active
          .filter((b) => !pausedAt.has(b))
          .map((b) => async () => {
            const ack = await send('POST', `${A}/namespaces/${b}/subscription/pause`, key, { months: 1 });
            acks.pauses.push(ack);
            if (ack.status === 200 || ack.status === 409) pausedAt.set(b, Date.now());
          }),
      );
      await sleep(500);
    }
  };
  await pauseJobs();
  await faults.done();
  // The pauses end a month on, on the app's test clock (issue 40); moved once the incentives' own deadline passed in
  // real time, so their expiry is measured as before. A retry whose first try moved it already answers 400 or 409.
  await sleep(Math.max(0, expiresAt.getTime() + 1000 - Date.now()));
  const moved = await send('POST', `${A}/test-clock/advance`, key, {
    to: new Date(Date.now() + 32 * 86_400_000).toISOString(),
  });
  const advancedAt = Date.now();
  say(`test clock: moved 32 days on (${moved.status}, ${moved.tries} tries)`);
  const quietFrom = Math.max(faults.lastRestart(), Date.now());
  return { acks, buyers, checkoutIds, approveUrls, pausedAt, expiresAt, advancedAt, quietFrom };
}
