// Credits consumed by feature and by pool over time (issue 42 item 6), read from the credits ledger: each draw's
// debit row carries the credits it took at the cost of that moment, and each refund by negative usage its own row,
// so the sums are exact even after a cost changed or while a pool was unlimited (nothing taken, nothing counted).
// docs/decisions: "Credits analytics read the ledger, not usage times today's cost".
import type { z } from 'zod';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { iso } from '../time.js';
import type * as S from './analytics.schemas.js';
import { BUCKET, WINDOW } from './analytics.service.js';

interface Sums {
  debited: number;
  refunded: number;
  consumed: number;
}
const zero = (): Sums => ({ debited: 0, refunded: 0, consumed: 0 });
const add = (s: Sums, debited: number, refunded: number) => {
  s.debited += debited;
  s.refunded += refunded;
  s.consumed += debited - refunded;
};

/**
 * The window (its end `at` or now, its start that much earlier; `alltime`: from the first draw) and its buckets, daily
 * up to 60 days and weekly (Monday, UTC) beyond, every bucket present. $1 app, $2 bucket, $3 at, $4 interval, $5 to
 * $7 the filters (as in SUMS_SQL). The bounds also come as text: a Date would drop their microseconds.
 */
const BUCKETS_SQL = `
with w as (select t, case when $4::text is null then null else t - $4::interval end as f
             from (select coalesce($3::timestamptz, now()) as t) x),
bounds as (
  select w.t, w.f,
         date_trunc($2, coalesce(w.f, (select min(created_at) from credit_ledger
                                        where app_id = $1 and kind in ('debit', 'refund') and feature is not null
                                          and ($5::text is null or account_id = $5)
                                          and ($6::text is null or pool_id = $6)
                                          and ($7::text is null or feature = $7)),
                                 w.t) at time zone 'UTC') as lo,
         date_trunc($2, w.t at time zone 'UTC') as hi
  from w)
select b.t as "to", b.f as "from", b.t::text as to_text, b.f::text as from_text, (s at time zone 'UTC') as start
from bounds b, generate_series(b.lo, b.hi, ('1 ' || $2)::interval) s
order by s`;

/**
 * The draws and refunds of features in `[from, to]`, per pool, feature and bucket ($1 app, $2 bucket, $3 from or
 * null, $4 to, $5 account, $6 pool, $7 feature, each null for all), with the names of the pool and the feature.
 */
const SUMS_SQL = `
with l as (
  select l.pool_id, l.feature, date_trunc($2, l.created_at at time zone 'UTC') as start,
         coalesce(sum(-l.amount) filter (where l.kind = 'debit'), 0) as debited,
         coalesce(sum(l.amount) filter (where l.kind = 'refund'), 0) as refunded
    from credit_ledger l
   where l.app_id = $1 and l.kind in ('debit', 'refund') and l.feature is not null
     and ($3::timestamptz is null or l.created_at >= $3) and l.created_at <= $4
     and ($5::text is null or l.account_id = $5) and ($6::text is null or l.pool_id = $6)
     and ($7::text is null or l.feature = $7)
   group by 1, 2, 3)
select l.pool_id as pool, p.name as pool_name, p.seq as pool_seq, l.feature, f.name as feature_name,
       f.seq as feature_seq, (l.start at time zone 'UTC') as start, l.debited, l.refunded
  from l
  left join entitlements p on p.app_id = $1 and p.id = l.pool_id
  left join entitlements f on f.app_id = $1 and f.id = l.feature
 order by p.seq nulls last, l.pool_id, f.seq nulls last, l.feature, l.start`;

/** `GET /apps/:appId/analytics/credits`. `at` pins the window's end (tests compare answers at chosen instants). */
export async function creditsConsumed(ctx: Ctx, q: z.output<typeof S.creditsQuery>, at?: Date) {
  const bucket = BUCKET[q.interval];
  const filters = [q.namespace ?? null, q.pool ?? null, q.feature ?? null];
  const buckets = await sql<{ to: Date; from: Date | null; to_text: string; from_text: string | null; start: Date }>(
    ctx.em,
    BUCKETS_SQL,
    [ctx.app.id, bucket, at ?? null, WINDOW[q.interval], ...filters],
  );
  const { to, from } = buckets[0];
  const rows = await sql<{
    pool: string;
    pool_name: string | null;
    feature: string;
    feature_name: string | null;
    start: Date;
    debited: string;
    refunded: string;
  }>(ctx.em, SUMS_SQL, [ctx.app.id, bucket, buckets[0].from_text, buckets[0].to_text, ...filters]);
  const total = zero();
  const pools = new Map<string, Sums & { pool: string; name: string | null }>();
  const features = new Map<string, Sums & { feature: string; name: string | null; pool: string }>();
  const points = new Map(buckets.map((b) => [iso(b.start)!, { consumed: 0, features: new Map<string, number>() }]));
  for (const r of rows) {
    const debited = Number(r.debited);
    const refunded = Number(r.refunded);
    add(total, debited, refunded);
    const p = pools.get(r.pool) ?? { pool: r.pool, name: r.pool_name, ...zero() };
    add(p, debited, refunded);
    pools.set(r.pool, p);
    // A feature draws from one pool at a time; one that moved to another pool shows once per pool it drew from.
    const key = `${r.pool}\u0000${r.feature}`;
    const f = features.get(key) ?? { feature: r.feature, name: r.feature_name, pool: r.pool, ...zero() };
    add(f, debited, refunded);
    features.set(key, f);
    const point = points.get(iso(r.start)!);
    if (point) {
      point.consumed += debited - refunded;
      point.features.set(r.feature, (point.features.get(r.feature) ?? 0) + debited - refunded);
    }
  }
  return {
    interval: q.interval,
    from: iso(from),
    to: iso(to)!,
    bucket,
    namespace: q.namespace ?? null,
    pool: q.pool ?? null,
    feature: q.feature ?? null,
    ...total,
    pools: [...pools.values()].map(({ pool, name, debited, refunded, consumed }) => ({
      pool,
      name,
      debited,
      refunded,
      consumed,
    })),
    features: [...features.values()].map(({ feature, name, pool, debited, refunded, consumed }) => ({
      feature,
      name,
      pool,
      debited,
      refunded,
      consumed,
    })),
    points: [...points.entries()].map(([start, p]) => ({
      start,
      consumed: p.consumed,
      features: [...p.features.entries()].map(([feature, consumed]) => ({ feature, consumed })),
    })),
  };
}
