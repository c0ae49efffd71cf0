// The `metering` section of `npm run bench`: batch ingest through HTTP beside the same database call over a plain
// pool, and the replay of an idempotency key.
import autocannon from 'autocannon';
import pg from 'pg';
import { INGEST_SQL, ingestParams, type IngestEvent } from '../src/usage/ingest.service.js';
import { rollUpUsage } from '../src/housekeeping/rollup.js';
import { testEnv } from '../test/helpers/servers.js';
import { ACCOUNTS, DURATION } from './settings.js';
import { fmt, percentile } from './load.js';

const BATCH = Number(process.env.BENCH_BATCH ?? 500);
const BATCH_CLIENTS = 4;

/**
 * Metering: batch ingest (events/s through HTTP beside the same `usage_ingest` call over a plain pool,
 * BATCH events a batch, BATCH_CLIENTS batches in flight) and the replay of an idempotency key.
 */
export async function meteringBench(
  base: string,
  pool: pg.Pool,
  app: { id: string; api_key: string; public_key: string },
  account: () => string,
) {
  let seq = 0;
  const batch = (prefix: string, pick: () => string, timestamp?: string) =>
    Array.from({ length: BATCH }, () => ({
      id: `${prefix}-${++seq}`,
      account: pick(),
      entitlement: 'api_calls',
      amount: 1,
      ...(timestamp ? { timestamp } : {}),
    }));
  // Sender c of `clients` draws from its own slice of the accounts (as a pipeline keyed by customer sends), or
  // every sender from all of them.
  const slice = (c: number, clients: number) => () => `acct-${Math.floor(((c + Math.random()) * ACCOUNTS) / clients)}`;
  const run = async (clients: number, send: (events: unknown[]) => Promise<boolean>, keyed = false, ageMs = 0) => {
    let events = 0;
    let errors = 0;
    const latencies: number[] = [];
    const end = Date.now() + DURATION * 1000;
    await Promise.all(
      Array.from({ length: clients }, async (_, c) => {
        while (Date.now() < end) {
          const b = batch(
            'bench',
            keyed ? slice(c, clients) : account,
            ageMs ? new Date(Date.now() - ageMs).toISOString() : undefined,
          );
          const t0 = process.hrtime.bigint();
          if (await send(b)) events += b.length;
          else errors++;
          latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    return { eps: events / DURATION, p50: percentile(latencies, 50), errors };
  };
  const viaHttp = async (events: unknown[]) => {
    const r = await fetch(`${base}/apps/${app.id}/usage/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${app.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ events }),
    });
    await r.text();
    return r.ok;
  };
  // The ceiling: the very database call the route makes, over a plain pool.
  const direct = (events: unknown[]) =>
    pool
      .query(INGEST_SQL, ingestParams(app.id, events as IngestEvent[]))
      .then(() => true)
      .catch(() => false);
  await run(BATCH_CLIENTS, viaHttp); // warm-up
  process.stdout.write(
    `\nBatch ingest: ${BATCH} events a batch over ${ACCOUNTS} accounts picked at random, ${DURATION} s per row\n` +
      'in flight                 HTTP events/s  batch p50 ms |  raw events/s  batch p50 ms |  HTTP/raw  errors\n',
  );
  // One batch at a time; BATCH_CLIENTS at once over all the accounts (their counters overlap, so each batch waits
  // for the one holding its first shared counter to commit); BATCH_CLIENTS at once, each over its own accounts; and
  // the same with events two hours old, after a roll-up run (each is then recorded as a late row for analytics).
  for (const [clients, keyed, ageMs] of [
    [1, false, 0],
    [BATCH_CLIENTS, false, 0],
    [BATCH_CLIENTS, true, 0],
    [BATCH_CLIENTS, true, 2 * 3_600_000],
  ] as const) {
    if (ageMs) await rollUpUsage(testEnv().deps);
    const h = await run(clients, viaHttp, keyed, ageMs);
    const r = await run(clients, direct, keyed, ageMs);
    const label = `${clients}${keyed ? ' by account' : ''}${ageMs ? ', 2 h old' : ''}`;
    process.stdout.write(
      `${label.padStart(21)} ${fmt(h.eps, 0)}      ${fmt(h.p50, 1)}    | ` +
        `${fmt(r.eps, 0)}     ${fmt(r.p50, 1)}    | ${fmt((h.eps / r.eps) * 100, 0)}%   ${h.errors + r.errors}\n`,
    );
  }

  const path = `/apps/${app.id}/namespaces/acct-1/usage/api_calls/add`;
  const first = await fetch(base + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${app.api_key}`, 'idempotency-key': 'bench-replay' },
  });
  await first.text();
  process.stdout.write('Idempotent replay (one key, POST .../add answered from the key):\n');
  for (const c of [1, 16]) {
    const result = await autocannon({
      url: base + path,
      connections: c,
      duration: DURATION,
      method: 'POST',
      headers: { authorization: `Bearer ${app.api_key}`, 'idempotency-key': 'bench-replay' },
    });
    process.stdout.write(
      `  ${String(c).padStart(3)} conns ${fmt(result.requests.average, 0)} req/s   p50 ${result.latency.p50} ms   ` +
        `errors ${result.non2xx + result.errors}\n`,
    );
  }
}
