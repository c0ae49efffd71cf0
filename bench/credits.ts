// `BENCH_ONLY=credits npm run bench` (issue 42, item 7): a credit-drawing usage add through HTTP beside the very same
// statement (CHANGE_SQL with its debit) over a bare pool, at the `hot` section's connections, on the shipped
// defaults; and batch ingest of credit-drawing events (the `metering` section's shape: 500 events a batch, 4 senders
// by account) beside the same database call. An app of its own: a pool, a feature drawing 1 credit a unit, 1,000
// accounts each granted credits enough for the run (a refused draw would measure the 402, not the draw).
import type pg from 'pg';
import { change } from '../src/usage/usage.service.js';
import { CHANGE_SQL } from '../src/usage/usage.sql.js';
import { INGEST_SQL, ingestParams, type IngestEvent } from '../src/usage/ingest.service.js';
import { createTestApp } from '../test/helpers/factories.js';
import { testEnv } from '../test/helpers/servers.js';

interface Stats {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

/** What the bench's main file measures with (bench/run.ts): passed in, so both sections measure alike. */
export interface CreditsBenchTools {
  connections: number[];
  seconds: number;
  httpLoad: (base: string, c: number, pathFor: () => string, method: 'GET' | 'POST', token: string) => Promise<Stats>;
  raw: (
    pool: pg.Pool,
    c: number,
    name: string,
    text: string,
    paramsFor: () => unknown[],
    via?: (params: unknown[]) => Promise<unknown>,
  ) => Promise<Stats>;
}

const ACCOUNTS = 1000;
const BATCH = 500;
const SENDERS = 4;
const fmt = (n: number, d = 1) => n.toFixed(d).padStart(9);
const percentile = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : 0;

export async function creditsBench(base: string, pool: pg.Pool, t: CreditsBenchTools): Promise<void> {
  const app = await createTestApp('bench-credits');
  const call = async (path: string, body: unknown, expect = 201) => {
    const res = await fetch(`${base}/apps/${app.id}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${app.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (res.status !== expect) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  };
  await call('/entitlements', { id: 'credits', type: 'credits', name: 'AI credits' });
  await call('/entitlements', { id: 'msg', type: 'usage', name: 'Messages', credits: { pool: 'credits', cost: 1 } });
  await call('/plans', { id: 'ai', name: 'AI' });
  await call('/plans/ai/entitlements', { id: 'msg', max: null });
  // The pool on the plan with no monthly grant: each account's balance is the grant below.
  await call('/plans/ai/entitlements', { id: 'credits', max: 0 });
  const imported = await fetch(`${testEnv().baseUrl}/apps/${app.id}/import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${testEnv().adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ accounts: Array.from({ length: ACCOUNTS }, (_, i) => ({ id: `c-${i}`, plan: 'ai' })) }),
  });
  if (imported.status !== 201) throw new Error(`seed failed: ${await imported.text()}`);
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let i = next++; i < ACCOUNTS; i = next++)
        await call(`/namespaces/c-${i}/credits/grants`, { pool: 'credits', amount: 1e11 });
    }),
  );
  await pool.query('analyze');
  const account = () => `c-${Math.floor(Math.random() * ACCOUNTS)}`;

  process.stdout.write(
    `\nCredits: a usage add drawing 1 credit (POST .../usage/msg/add) beside CHANGE_SQL on a bare pool, ${t.seconds} s ` +
      `per cell, ${ACCOUNTS} accounts at random, shipped defaults (secret key)\n` +
      'conns   HTTP req/s   p50 ms   p99 ms |  raw SQL/s   p50 ms   p99 ms |  HTTP/raw  errors | raw coalesced/s  HTTP/that\n',
  );
  const params = () => [
    app.id,
    account(),
    'msg',
    1,
    'evt_b_w',
    'evt_b_r',
    null,
    null,
    null,
    'evt_b_c',
    null,
    'grt_b',
    '',
  ];
  const path = () => `/apps/${app.id}/namespaces/${account()}/usage/msg/add`;
  await t.httpLoad(base, 4, path, 'POST', app.api_key); // warm-up
  for (const c of t.connections) {
    const h = await t.httpLoad(base, c, path, 'POST', app.api_key);
    const r = await t.raw(pool, c, 'usage_change_credits', CHANGE_SQL, params);
    const rc = await t.raw(pool, c, 'usage_change_credits', CHANGE_SQL, params, (p) => change.onPool(pool, p));
    process.stdout.write(
      `${String(c).padStart(5)} ${fmt(h.rps, 0)}    ${fmt(h.p50, 2)} ${fmt(h.p99, 2)} | ${fmt(r.rps, 0)} ` +
        `${fmt(r.p50, 2)} ${fmt(r.p99, 2)} | ${fmt((h.rps / r.rps) * 100, 0)}%   ${String(h.errors + r.errors).padEnd(6)}` +
        `| ${fmt(rc.rps, 0)}      ${fmt((h.rps / rc.rps) * 100, 0)}%\n`,
    );
  }

  // Ingest: SENDERS batches in flight, each sender over its own slice of the accounts.
  let seq = 0;
  const batch = (c: number) =>
    Array.from({ length: BATCH }, () => ({
      id: `cb-${++seq}`,
      account: `c-${Math.floor(((c + Math.random()) * ACCOUNTS) / SENDERS)}`,
      entitlement: 'msg',
      amount: 1,
    }));
  const run = async (send: (events: IngestEvent[]) => Promise<boolean>) => {
    let events = 0;
    let errors = 0;
    const latencies: number[] = [];
    const end = Date.now() + t.seconds * 1000;
    await Promise.all(
      Array.from({ length: SENDERS }, async (_, c) => {
        while (Date.now() < end) {
          const b = batch(c);
          const t0 = process.hrtime.bigint();
          if (await send(b)) events += b.length;
          else errors++;
          latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    return { eps: events / t.seconds, p50: percentile(latencies, 50), errors };
  };
  const viaHttp = async (events: IngestEvent[]) => {
    const r = await fetch(`${base}/apps/${app.id}/usage/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${app.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ events }),
    });
    const body = (await r.json()) as { results?: { status: string }[] };
    // Every event must have drawn: a refused one would not be the path measured.
    return r.ok && (body.results ?? []).every((x) => x.status === 'applied');
  };
  const direct = (events: IngestEvent[]) =>
    pool
      .query(INGEST_SQL, ingestParams(app.id, events))
      .then(() => true)
      .catch(() => false);
  await run(viaHttp); // warm-up
  const h = await run(viaHttp);
  const r = await run(direct);
  const [ledger] = (
    await pool.query<{ n: string }>(`select count(*) as n from credit_ledger where app_id = $1 and kind = 'debit'`, [
      app.id,
    ])
  ).rows;
  process.stdout.write(
    `\nBatch ingest of credit-drawing events: ${BATCH} a batch, ${SENDERS} senders by account\n` +
      `  HTTP ${fmt(h.eps, 0)} events/s (batch p50 ${h.p50.toFixed(1)} ms) | raw ${fmt(r.eps, 0)} events/s ` +
      `(batch p50 ${r.p50.toFixed(1)} ms) | HTTP/raw ${((h.eps / r.eps) * 100).toFixed(0)}% | errors ` +
      `${h.errors + r.errors}\n  debit ledger rows written by the section: ${Number(ledger.n).toLocaleString('en-US')}\n`,
  );
}
