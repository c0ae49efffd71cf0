// `BENCH_ONLY=billing npm run bench` (issue 40, item 10): a billing intent's latency over HTTP, beside the hot paths.
// A quote (a read: the account's state and catalog, no provider, no Temporal), accepted updates (pause then resume
// round trips on many accounts: update-with-start of the account's actor, its validator, one activity with the
// PayPal stand-in's call and the transaction, the answer) and a refusal by the actor's validator (resume of an active
// subscription: a 409 without any activity). The actor's worker is the bench process's (the test servers'); the API
// is its own process, as for the other sections.
import { PAYPAL_TEST_CREDENTIALS, testEnv } from '../test/helpers/servers.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ACCOUNTS = Number(process.env.BENCH_BILLING_ACCOUNTS ?? 48);

interface Row {
  name: string;
  walkers: number;
  latencies: number[];
  errors: number;
  calls: number;
}

function percentile(sorted: number[], p: number) {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function call(base: string, method: string, path: string, token: string, body?: unknown) {
  const t0 = process.hrtime.bigint();
  const res = await fetch(base + path, {
    method,
    headers: {
      Authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
    },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, text, ms: Number(process.hrtime.bigint() - t0) / 1e6 };
}

/** Runs `walkers` loops for SECONDS, each over its own accounts; `step` answers the latencies of one round. */
async function walk(
  name: string,
  walkers: number,
  accounts: string[],
  step: (account: string, timed: (ms: number, ok: boolean) => void) => Promise<void>,
): Promise<Row> {
  const row: Row = { name, walkers, latencies: [], errors: 0, calls: 0 };
  const end = Date.now() + SECONDS * 1000;
  const timed = (ms: number, ok: boolean) => {
    row.calls++;
    row.latencies.push(ms);
    if (!ok) row.errors++;
  };
  await Promise.all(
    Array.from({ length: walkers }, async (_, w) => {
      // Each walker owns every walkers-th account: no two intents of one account are in flight at once.
      const mine = accounts.filter((_, i) => i % walkers === w);
      for (let i = 0; Date.now() < end; i++) await step(mine[i % mine.length], timed);
    }),
  );
  row.latencies.sort((a, b) => a - b);
  return row;
}

export async function billingBench(base: string) {
  const { paypal, adminKey } = testEnv();
  const setup = async (method: string, path: string, token: string, body?: unknown) => {
    const r = await call(base, method, path, token, body);
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
    return JSON.parse(r.text || '{}') as Record<string, string>;
  };
  const app = await setup('POST', '/apps', adminKey, { name: 'bench billing' });
  const A = `/apps/${app.id}`;
  const key = app.api_key;
  await setup('POST', `${A}/plans`, key, { id: 'free', name: 'Free', isFree: true });
  for (const [id, price] of [
    ['basic', 9],
    ['team', 29],
    ['pro', 99],
  ] as const)
    await setup('POST', `${A}/plans`, key, { id, name: id, pricingCard: { monthlyPrice: price, currency: 'USD' } });
  const [[clientId, secret]] = Object.entries(PAYPAL_TEST_CREDENTIALS);
  await setup('PUT', `${A}/payments`, key, { client_id: clientId, client_secret: secret, env: 'sandbox' });
  await setup('PATCH', A, key, { checkout_url: 'https://shop.example/pricing' });
  await setup('POST', `${A}/offers`, key, {
    id: 'launch',
    name: 'Launch',
    plans: [{ plan: 'team', prices: [{ interval: 'month', amount: 29 }] }],
  });
  await setup('POST', `${A}/offers/launch/publish`, key);
  const accounts = Array.from({ length: ACCOUNTS }, (_, i) => `sub-${i}`);
  const started = Date.now();
  const queue = [...accounts];
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let a = queue.shift(); a; a = queue.shift()) {
        const chk = await setup('POST', `${A}/offers/launch/checkout`, key, {
          plan: 'team',
          interval: 'month',
          account: a,
        });
        await paypal.approve(chk.approve_url);
        for (let i = 0; ; i++) {
          const done = await setup('POST', `${A}/checkouts/${chk.id}/complete`, key);
          if (done.status === 'completed') break;
          if (i > 200) throw new Error(`checkout of ${a} did not complete`);
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    }),
  );
  const S = (a: string) => `${A}/namespaces/${a}/subscription`;
  // The accounts' actors are idle once the purchase's facts (the provider's notifications) have been taken.
  await new Promise((r) => setTimeout(r, 3000));
  process.stdout.write(
    `\nBilling intents over HTTP (secret key; ${ACCOUNTS} subscribed accounts, ${SECONDS} s per row; the actor's ` +
      `worker and the PayPal stand-in in the bench process; set up in ${((Date.now() - started) / 1000).toFixed(1)} s):\n`,
  );
  process.stdout.write('intent                          walkers   calls/s   p50 ms   p99 ms  errors\n');
  const print = (r: Row) =>
    process.stdout.write(
      `${r.name.padEnd(31)} ${String(r.walkers).padStart(7)} ${(r.calls / SECONDS).toFixed(1).padStart(9)} ` +
        `${percentile(r.latencies, 50).toFixed(2).padStart(8)} ${percentile(r.latencies, 99).toFixed(2).padStart(8)}  ` +
        `${r.errors}\n`,
    );
  const rows: Row[] = [];
  for (const walkers of [1, 16]) {
    const r = await walk('quote (upgrade to pro)', walkers, accounts, async (a, timed) => {
      const q = await call(base, 'POST', `${S(a)}/change/quote`, key, { plan: 'pro' });
      timed(q.ms, q.status === 200);
    });
    print(r);
    rows.push(r);
  }
  for (const walkers of [1, 8]) {
    const pauses: number[] = [];
    const resumes: number[] = [];
    const r = await walk('pause + resume (accepted)', walkers, accounts, async (a, timed) => {
      const p = await call(base, 'POST', `${S(a)}/pause`, key, { months: 1 });
      timed(p.ms, p.status === 200);
      pauses.push(p.ms);
      const s = await call(base, 'POST', `${S(a)}/resume`, key);
      timed(s.ms, s.status === 200);
      resumes.push(s.ms);
    });
    print(r);
    for (const [name, xs] of [
      ['  of which pause', pauses],
      ['  of which resume', resumes],
    ] as const) {
      xs.sort((x, y) => x - y);
      print({ name, walkers, latencies: xs, errors: 0, calls: xs.length });
    }
    rows.push(r);
  }
  const refused = await walk('resume of an active one (409)', 1, accounts, async (a, timed) => {
    const s = await call(base, 'POST', `${S(a)}/resume`, key);
    timed(s.ms, s.status === 409);
  });
  print(refused);
  return rows;
}
