// `npm run chaos -- freeze` (issue 29): PostgreSQL, then Temporal, frozen with SIGSTOP and resumed with SIGCONT under
// probes and writers, on the stack scripts/chaos.ts starts; prints what was answered, when, and what committed after
// its caller gave up. Settings: CHAOS_PG_FREEZE_S (default 60), CHAOS_TEMPORAL_FREEZE_S (default 20).
import { PayPalStandIn } from '../src/dev/paypal-standin.js';
import { freeze, thaw } from '../test/helpers/freeze.js';

export const PG_FREEZE_S = Number(process.env.CHAOS_PG_FREEZE_S ?? 60);
export const TEMPORAL_FREEZE_S = Number(process.env.CHAOS_TEMPORAL_FREEZE_S ?? 20);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (line: string) => process.stdout.write(line + '\n');

/** Polls `fn` every 100 ms until it answers something truthy; throws after `ms`. */
export async function until<T>(fn: () => Promise<T | undefined | false>, ms: number): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v) return v as T;
    if (Date.now() > end) throw new Error('timed out');
    await sleep(100);
  }
}

interface Probe {
  status: number;
  ms: number;
  /** The 503 said `outcome: "unknown"`: the database stopped answering while it committed the change. */
  unknown?: boolean;
}

/** A request whose caller waits `timeoutMs` at most (status 0: it gave up). */
async function timed(url: string, method = 'GET', token?: string, body?: unknown, timeoutMs = 5000): Promise<Probe> {
  const t = Date.now();
  try {
    const res = await fetch(url, {
      method,
      headers: {
        ...(token ? { Authorization: `Bearer ${token}` } : {}),
        ...(body ? { 'Content-Type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    return { status: res.status, ms: Date.now() - t, unknown: res.status === 503 && /"outcome":"unknown"/.test(text) };
  } catch {
    return { status: 0, ms: Date.now() - t };
  }
}

const tally = (xs: Probe[]) => {
  const statuses: Record<string, number> = {};
  for (const x of xs)
    statuses[x.status === 0 ? 'none' : x.status] = (statuses[x.status === 0 ? 'none' : x.status] ?? 0) + 1;
  return (
    `${xs.length}: answered within 5 s ${xs.filter((x) => x.status && x.ms <= 5000).length}, within 60 s ` +
    `${xs.filter((x) => x.status).length}, never ${xs.filter((x) => !x.status).length}; ` +
    `slowest ${Math.max(0, ...xs.filter((x) => x.status).map((x) => x.ms))} ms; statuses ${JSON.stringify(statuses)}`
  );
};

interface FreezeContext {
  base: string;
  app: { id: string; api_key: string; public_key?: string };
  pid: number | null;
  count: (q: string, params?: unknown[]) => Promise<number>;
}

/** What the PostgreSQL freeze also follows: webhook attempts and a checkout that wait on it (issue 39). */
interface WaitingWork {
  paypal: PayPalStandIn;
  received: { id: string; account?: string; at: number; status: number }[];
}

/**
 * PostgreSQL frozen under probes (/health, a read and a write each second, their callers waiting up to 60 s, as a
 * reliability engineer would) and writers (8 lanes: account creations, each a transaction, and usage adds, single
 * statements; their callers give up after 5 s). What matters: probes answered within 5 s, and writes that
 * committed although their caller got an error or gave up.
 */
export async function frozenPostgres(ctx: FreezeContext & WaitingWork) {
  say(`\n3. PostgreSQL frozen ${PG_FREEZE_S} s (SIGSTOP of the server and its backends), then resumed`);
  const { base, app } = ctx;
  const A = `${base}/apps/${app.id}`;
  await timed(`${A}/plans/free/entitlements`, 'POST', app.api_key, { id: 'calls' });
  await timed(`${A}/namespaces`, 'POST', app.api_key, { id: 'meter' });
  // Work that will wait on the freeze: a checkout past its first scheduled checks (the next one is a minute away),
  // approved once PostgreSQL is frozen (its notification meets a 503), and 20 deliveries whose first attempt the
  // receiver refuses, so their second comes due during the freeze.
  await timed(`${A}/payments`, 'PUT', app.api_key, {
    client_id: 'chaos',
    client_secret: 'chaos-secret',
    env: 'sandbox',
  });
  await timed(A, 'PATCH', app.api_key, { checkout_url: 'https://shop.example/pricing' });
  await timed(`${A}/plans`, 'POST', app.api_key, {
    id: 'frz',
    name: 'Frozen',
    pricingCard: { monthlyPrice: 9, currency: 'USD' },
  });
  await timed(`${A}/offers`, 'POST', app.api_key, {
    id: 'frz',
    name: 'Frz',
    plans: [{ plan: 'frz', prices: [{ interval: 'month', amount: 9 }] }],
  });
  await timed(`${A}/offers/frz/publish`, 'POST', app.api_key);
  const chkRes = await fetch(`${A}/offers/frz/checkout`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${app.api_key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ plan: 'frz', interval: 'month', account: 'frozen-buyer' }),
  });
  const chk = (await chkRes.json()) as { id?: string; approve_url?: string; error?: string };
  if (!chk.id) throw new Error(`checkout: ${chkRes.status} ${chk.error}`);
  await sleep(25_000); // its checks at 0, 2, 7 and 22 s; the next at 82 s
  for (let i = 0; i < 20; i++) await timed(`${A}/namespaces`, 'POST', app.api_key, { id: `fzw${i}` });
  await until(
    async () => ctx.received.filter((r) => r.account?.startsWith('fzw') && r.status === 500).length >= 20,
    60_000,
  );
  const usage = () =>
    ctx.count(`select coalesce(sum(count), 0) as n from usage_counters where app_id = ? and account_id = 'meter'`, [
      app.id,
    ]);
  const usageBefore = await usage();
  const writes: (Probe & { kind: 'account' | 'usage'; id: string })[] = [];
  const probes = { health: [] as Probe[], read: [] as Probe[], write: [] as Probe[] };
  let running = true;
  let frozenNow = false;
  const writers = Array.from({ length: 8 }, async (_, lane) => {
    for (let i = 0; running; i++) {
      const id = `fz${lane}_${i}`;
      const r =
        i % 2 === 0
          ? { kind: 'account' as const, ...(await timed(`${A}/namespaces`, 'POST', app.api_key, { id })) }
          : { kind: 'usage' as const, ...(await timed(`${A}/namespaces/meter/usage/calls/add`, 'POST', app.api_key)) };
      writes.push({ id, ...r });
    }
  });
  const pending: Promise<unknown>[] = [];
  const failedProbes: string[] = [];
  const prober = (async () => {
    for (let n = 0; running; n++) {
      if (frozenNow) {
        pending.push(
          timed(`${base}/health`, 'GET', undefined, undefined, 60_000).then((p) => probes.health.push(p)),
          timed(`${A}/plans`, 'GET', app.api_key, undefined, 60_000).then((p) => probes.read.push(p)),
          timed(`${A}/namespaces`, 'POST', app.api_key, { id: `probe${n}` }, 60_000).then((p) => {
            probes.write.push(p);
            if (p.status !== 201 && !p.unknown) failedProbes.push(`probe${n}`);
          }),
        );
      }
      await sleep(1000);
    }
  })();
  await sleep(1000);
  const pids = freeze(ctx.pid!);
  frozenNow = true;
  await ctx.paypal.approve(chk.approve_url!);
  await sleep(PG_FREEZE_S * 1000);
  frozenNow = false;
  thaw(pids);
  const thawedAt = Date.now();
  // What waited: when the last of the 20 second attempts arrived, and when the checkout completed.
  const waited = (async () => {
    const delivered = await until(async () => {
      const ok = ctx.received.filter((r) => r.account?.startsWith('fzw') && r.status === 200);
      return ok.length >= 20 ? Math.max(...ok.map((r) => r.at)) : undefined;
    }, 300_000).catch(() => null);
    const completed = await until(async () => {
      const res = await fetch(`${A}/checkouts/${chk.id}`, { headers: { Authorization: `Bearer ${app.api_key}` } });
      return res.ok && ((await res.json()) as { status: string }).status === 'completed' ? Date.now() : undefined;
    }, 300_000).catch(() => null);
    const notes = ctx.paypal.sent.filter((n) => n.url.endsWith(`/payments/webhooks/${app.id}`));
    return { delivered, completed, notes: notes.map((n) => n.status ?? 'none').join(', ') };
  })();
  let backMs = -1;
  for (;;) {
    const h = await timed(`${base}/health`);
    if (h.status === 200) {
      backMs = Date.now() - thawedAt;
      break;
    }
    if (Date.now() - thawedAt > 60_000) break;
    await sleep(100);
  }
  await sleep(5000);
  running = false;
  await Promise.all([...writers, prober, ...pending]);
  await sleep(3000); // whatever the server still held has run or failed
  // A 503 saying the outcome is unknown may have applied (a COMMIT under way when it froze): counted apart.
  const unknown = writes.filter((w) => w.kind === 'account' && w.unknown).map((w) => w.id);
  const failed = [
    ...writes.filter((w) => w.kind === 'account' && w.status !== 201 && !w.unknown).map((w) => w.id),
    ...failedProbes,
  ];
  const among = async (ids: string[]) =>
    ids.length
      ? await ctx.count(`select count(*) as n from accounts where app_id = ? and id in (?)`, [app.id, ids])
      : 0;
  const committedAfterError = await among(failed);
  const unknownCommitted = await among(unknown);
  const adds = writes.filter((w) => w.kind === 'usage');
  const applied = (await usage()) - usageBefore;
  const answered = adds.filter((w) => w.status === 200).length;
  say(`   probes while frozen (one of each per second, callers waiting up to 60 s):`);
  say(`     /health ${tally(probes.health)}`);
  say(`     read    ${tally(probes.read)}`);
  say(`     write   ${tally(probes.write)}`);
  const accounts = writes.filter((w) => w.kind === 'account');
  say(`   account writes (a transaction each; callers give up after 5 s): ${tally(accounts)}`);
  say(
    `   account writes (the writers' and the probes') committed after their caller got an error or gave up: ` +
      `${committedAfterError} of ${failed.length}; answered 503 "outcome unknown" ${unknown.length}, of those ` +
      `committed ${unknownCommitted}`,
  );
  say(
    `   usage adds (a single statement each): ${tally(adds)}; applied ${applied}, answered 200 ${answered}: ` +
      `${applied - answered} applied after their caller got an error or gave up`,
  );
  say(`   /health answered 200 again ${backMs} ms after SIGCONT (nothing restarted)`);
  const w = await waited;
  const after = (at: number | null) => (at === null ? 'never (5 minutes)' : `${((at - thawedAt) / 1000).toFixed(1)} s`);
  say(
    `   waited on the freeze: 20 webhook attempts due during it, the last delivered ${after(w.delivered)} after ` +
      `SIGCONT; a checkout approved during it (provider notifications answered ${w.notes}), completed ` +
      `${after(w.completed)} after SIGCONT`,
  );
}

/** Temporal frozen while accounts are created (each a webhook delivery start through the outbox). */
export async function frozenTemporal(
  ctx: FreezeContext & { received: { id: string; type: string; account?: string }[] },
) {
  say(`\n4. Temporal frozen ${TEMPORAL_FREEZE_S} s, then resumed, while accounts are created (each a workflow start)`);
  const { base, app } = ctx;
  const A = `${base}/apps/${app.id}`;
  const pids = freeze(ctx.pid!);
  const frozenAt = Date.now();
  const writes: Probe[] = [];
  const healths: Probe[] = [];
  for (let n = 0; Date.now() - frozenAt < TEMPORAL_FREEZE_S * 1000; n++) {
    const [w, h] = await Promise.all([
      timed(`${A}/namespaces`, 'POST', app.api_key, { id: `tf${n}` }, 60_000),
      timed(`${base}/health`, 'GET', undefined, undefined, 60_000),
      sleep(500),
    ]);
    writes.push(w);
    healths.push(h);
  }
  const backlog = await ctx.count('select count(*) as n from outbox');
  thaw(pids);
  const thawedAt = Date.now();
  await until(async () => (await ctx.count('select count(*) as n from outbox')) === 0, 300_000).catch(() => undefined);
  const drainMs = Date.now() - thawedAt;
  const ours = () => ctx.received.filter((r) => r.type === 'account.created' && r.account?.startsWith('tf'));
  await until(async () => ours().length >= writes.length, 120_000).catch(() => undefined);
  const got = ours();
  say(`   writes while frozen: ${tally(writes)}`);
  say(`   /health while frozen: ${tally(healths)}`);
  const distinct = new Set(got.map((r) => r.id)).size;
  say(
    `   outbox backlog ${backlog}, drained ${drainMs} ms after SIGCONT; deliveries ${got.length}, distinct ` +
      `${distinct} of ${writes.filter((w) => w.status === 201).length} accounts`,
  );
}
