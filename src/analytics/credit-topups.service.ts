// Top-up revenue (issue 42 item 6): the money of credit pack orders over a window, by pack and currency. Only orders
// PayPal confirmed captured count (status `completed`, set in the same transaction as the grant of the capture PayPal
// reported COMPLETED); an order only created or approved counts nothing. Orders are placed in the window by the time
// of their capture, and carry every refund of that capture recorded so far ("Top-up revenue" in docs/decisions).
import type { z } from 'zod';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { iso } from '../time.js';
import type * as S from './analytics.schemas.js';
import { WINDOW } from './analytics.service.js';

/**
 * One statement: the window ($2 its length, null: all time) and the captured orders in it ($1 app, $3 account, $4
 * pool, each null for all) per pack and currency, on the partial index `credit_pack_orders_captured_index`
 * (app, capture time, completed orders only). The left join keeps one row (with a null pack) when nothing was
 * captured, so the window is always answered. Money is summed as numeric and read as text: exact cents.
 */
const TOPUPS_SQL = `
with w as (select now() as t, case when $2::text is null then null else now() - $2::interval end as f)
select w.t as "to", w.f as "from", o.pack_id as pack, o.pool_id as pool, o.currency,
       count(o.id)::int as orders, coalesce(sum(o.amount), 0)::text as credits,
       coalesce(sum(o.price), 0)::text as captured, coalesce(sum(o.refunded), 0)::text as refunded,
       coalesce(sum(o.price - o.refunded), 0)::text as net
  from w
  left join credit_pack_orders o
    on o.app_id = $1 and o.status = 'completed' and o.completed_at <= w.t
   and o.completed_at >= coalesce(w.f, '-infinity')
   and ($3::text is null or o.account_id = $3) and ($4::text is null or o.pool_id = $4)
 group by w.t, w.f, o.pack_id, o.pool_id, o.currency
 order by o.currency, sum(o.price - o.refunded) desc, o.pack_id, o.pool_id`;

type Counts = { orders: number; credits: number; captured: number; refunded: number; net: number };
/** Adds money in cents, so sums of two-decimal amounts stay exact. */
const cents = (v: number) => Math.round(v * 100);
const plus = (a: number, b: number) => (cents(a) + cents(b)) / 100;

/** `GET /apps/:appId/analytics/credits/topups`. */
export async function creditTopups(
  ctx: Ctx,
  q: z.output<typeof S.topupsQuery>,
): Promise<z.input<typeof S.topupsSchema>> {
  const rows = await sql<{
    to: Date;
    from: Date | null;
    pack: string | null;
    pool: string;
    currency: string;
    orders: number;
    credits: string;
    captured: string;
    refunded: string;
    net: string;
  }>(ctx.em, TOPUPS_SQL, [ctx.app.id, WINDOW[q.interval], q.namespace ?? null, q.pool ?? null]);
  const data = rows
    .filter((r) => r.pack !== null)
    .map((r) => ({
      pack: r.pack!,
      pool: r.pool,
      currency: r.currency,
      orders: r.orders,
      credits: Number(r.credits),
      captured: Number(r.captured),
      refunded: Number(r.refunded),
      net: Number(r.net),
    }));
  const totals = new Map<string, Counts & { currency: string }>();
  for (const r of data) {
    const t = totals.get(r.currency) ?? {
      currency: r.currency,
      orders: 0,
      credits: 0,
      captured: 0,
      refunded: 0,
      net: 0,
    };
    t.orders += r.orders;
    t.credits += r.credits;
    t.captured = plus(t.captured, r.captured);
    t.refunded = plus(t.refunded, r.refunded);
    t.net = plus(t.net, r.net);
    totals.set(r.currency, t);
  }
  return {
    interval: q.interval,
    from: iso(rows[0].from),
    to: iso(rows[0].to)!,
    namespace: q.namespace ?? null,
    pool: q.pool ?? null,
    totals: [...totals.values()],
    data,
  };
}
