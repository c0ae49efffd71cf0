import type { z } from 'zod';
import type { Ctx } from '../context.js';
import { sql } from '../db/sql.js';
import { iso } from '../time.js';
import { WINDOW } from './analytics.service.js';
import type * as S from './analytics.schemas.js';

/**
 * The 402 upgrade funnel: limit reached (a 402 offered an upgrade) -> link shown (it had a checkout link) -> opened
 * (the buyer opened a provider approval link a 402 made) -> paid (that checkout completed), per entitlement, with the
 * first payments' revenue. Links to the app's own pricing page are counted as shown; what happens on that page is
 * the offer funnel's (`GET .../offers/:offerId/stats`).
 */
export async function upgradeFunnel(
  ctx: Ctx,
  q: z.output<typeof S.upgradesQuery>,
): Promise<z.input<typeof S.upgradesSchema>> {
  const [w] = await sql<{ to: Date; from: Date | null }>(
    ctx.em,
    `select now() as "to", case when $1::text is null then null else now() - $1::interval end as "from"`,
    [WINDOW[q.interval]],
  );
  const params = [ctx.app.id, w.from, q.entitlement ?? null];
  const [prompts, checkouts] = await Promise.all([
    sql<{ entitlement_id: string; prompts: string; links: string }>(
      ctx.em,
      `select entitlement_id, sum(prompts) as prompts, sum(links) as links from upgrade_prompts
        where app_id = $1 and ($2::timestamptz is null or day >= ($2::timestamptz at time zone 'utc')::date)
          and ($3::text is null or entitlement_id = $3) group by entitlement_id`,
      params,
    ),
    sql<{ entitlement_id: string; currency: string; opened: string; paid: string; revenue: number }>(
      ctx.em,
      `select upgrade_entitlement_id as entitlement_id, currency,
              count(*) filter (where opened_at is not null or status = 'completed') as opened,
              count(*) filter (where status = 'completed') as paid,
              coalesce(sum(price) filter (where status = 'completed'), 0)::float8 as revenue
         from checkouts
        where app_id = $1 and source = 'upgrade_link' and ($2::timestamptz is null or created_at >= $2)
          and ($3::text is null or upgrade_entitlement_id = $3)
        group by upgrade_entitlement_id, currency`,
      params,
    ),
  ]);
  type Row = { entitlement: string; limit_reached: number; link_shown: number; opened: number; paid: number };
  const by = new Map<string, Row>();
  const row = (id: string) => {
    const r = by.get(id) ?? { entitlement: id, limit_reached: 0, link_shown: 0, opened: 0, paid: 0 };
    by.set(id, r);
    return r;
  };
  for (const p of prompts) {
    const r = row(p.entitlement_id);
    r.limit_reached += Number(p.prompts);
    r.link_shown += Number(p.links);
  }
  const revenue: Record<string, number> = {};
  for (const c of checkouts) {
    const r = row(c.entitlement_id ?? '(unknown)');
    r.opened += Number(c.opened);
    r.paid += Number(c.paid);
    if (Number(c.paid)) revenue[c.currency] = Math.round(((revenue[c.currency] ?? 0) + c.revenue) * 100) / 100;
  }
  const rows = [...by.values()].sort((a, b) => a.entitlement.localeCompare(b.entitlement));
  const sum = (k: keyof Omit<Row, 'entitlement'>) => rows.reduce((n, r) => n + r[k], 0);
  return {
    interval: q.interval,
    from: iso(w.from),
    to: iso(w.to)!,
    limit_reached: sum('limit_reached'),
    link_shown: sum('link_shown'),
    opened: sum('opened'),
    paid: sum('paid'),
    revenue,
    by_entitlement: rows,
  };
}
