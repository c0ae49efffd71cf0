import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { sql } from '../db/sql.js';
import { AppError, badRequest } from '../errors.js';
import type { CapPeriod, Guardrails } from './mcp.entities.js';

/**
 * Agent guard-rails (issue 33, item 4). Each OAuth connection, and the app's key-based MCP use as one holder
 * (`keys`), may carry a spend cap (money in checkouts and plan changes its tools start per period) and usage caps
 * (usage its tools record per entitlement per period). A tool call takes its amount from the cap in one statement
 * that refuses to pass it (concurrent calls cannot overshoot), gives it back when the call fails, and a refusal says
 * which cap, what is left and who raises it where.
 */

const period = z.enum(['day', 'month']);
export const spendCapSchema = z.object({
  amount: z.number().min(0).max(1e9),
  currency: z.string().regex(/^[A-Za-z]{3}$/, 'a three-letter currency code, for example USD'),
  period,
});
export const usageCapSchema = z.object({
  entitlement_id: z.string().min(1).max(255),
  amount: z.number().int().min(0).max(1e12),
  period,
});
/** Set at consent or by an operator; an omitted field keeps its value, `spend_cap: null` removes the cap. */
export const guardrailsInput = z.object({
  spend_cap: spendCapSchema.nullable().optional(),
  usage_caps: z.array(usageCapSchema).max(50).optional(),
});
export type GuardrailsInput = z.output<typeof guardrailsInput>;

const progress = { used: z.number(), left: z.number(), resets_at: z.string() };
/** The caps with what was used in the current period. */
export const guardrailsView = z.object({
  spend_cap: spendCapSchema.extend(progress).nullable(),
  usage_caps: z.array(usageCapSchema.extend(progress)),
});
export type GuardrailsView = z.input<typeof guardrailsView>;

export const NO_GUARDRAILS: Guardrails = { spend_cap: null, usage_caps: [] };

/** The caps after a change (currency upper-cased); one cap per entitlement. */
export function mergeGuardrails(current: Guardrails | null, input: GuardrailsInput | undefined): Guardrails {
  const base = current ?? NO_GUARDRAILS;
  if (!input) return base;
  const spend = input.spend_cap === undefined ? base.spend_cap : input.spend_cap;
  const usage = input.usage_caps ?? base.usage_caps;
  const seen = new Set<string>();
  for (const c of usage) {
    if (seen.has(c.entitlement_id))
      throw badRequest(`usage_caps: entitlement ${c.entitlement_id} has two caps; give it one`);
    seen.add(c.entitlement_id);
  }
  return { spend_cap: spend ? { ...spend, currency: spend.currency.toUpperCase() } : null, usage_caps: usage };
}

/** Who holds the caps: the OAuth connection, or the app's key-based MCP use. */
export type Holder = { kind: 'connection'; id: string } | { kind: 'keys' };
const holderKey = (h: Holder) => (h.kind === 'keys' ? 'keys' : h.id);

/** A cap a call counts against: what it is, and how much the call takes from it. */
export interface Charge {
  cap: { kind: 'spend'; currency: string } | { kind: 'usage'; entitlementId: string };
  limit: number;
  period: CapPeriod;
  amount: number;
}

const capKey = (c: Charge['cap']) => (c.kind === 'spend' ? `spend:${c.currency}` : `usage:${c.entitlementId}`);
const START = (p: string) => `date_trunc(${p}, now() at time zone 'UTC') at time zone 'UTC'`;

/**
 * Takes the charge from its cap in one statement: the period's row moves only when the total stays within the cap
 * (PostgreSQL locks the row, so concurrent calls are counted one after the other). Null when it fits, else what
 * was used already.
 */
export async function takeFromCap(em: EntityManager, appId: string, holder: Holder, c: Charge): Promise<number | null> {
  const rows = await sql<{ used: string }>(
    em,
    `insert into mcp_cap_counters as m (app_id, holder, cap, period_start, used)
     select $1, $2, $3, ${START('$4')}, $5::numeric where $5::numeric <= $6::numeric
     on conflict (app_id, holder, cap, period_start)
       do update set used = m.used + excluded.used where m.used + excluded.used <= $6::numeric
     returning used`,
    [appId, holderKey(holder), capKey(c.cap), c.period, String(c.amount), String(c.limit)],
  );
  if (rows.length) return null;
  return usedOf(em, appId, holder, c);
}

/** Gives a charge back (the call failed, so it started or recorded nothing). */
export async function giveBack(em: EntityManager, appId: string, holder: Holder, c: Charge): Promise<void> {
  await sql(
    em,
    `update mcp_cap_counters set used = greatest(0, used - $5::numeric)
      where app_id = $1 and holder = $2 and cap = $3 and period_start = ${START('$4')}`,
    [appId, holderKey(holder), capKey(c.cap), c.period, String(c.amount)],
  );
}

/** What the holder used of a cap in its current period. */
export async function usedOf(
  em: EntityManager,
  appId: string,
  holder: Holder,
  c: Pick<Charge, 'cap' | 'period'>,
): Promise<number> {
  const [row] = await sql<{ used: string }>(
    em,
    `select used from mcp_cap_counters where app_id = $1 and holder = $2 and cap = $3 and period_start = ${START('$4')}`,
    [appId, holderKey(holder), capKey(c.cap), c.period],
  );
  return row ? Number(row.used) : 0;
}

/** When the current period of a cap ends (UTC). */
export function resetsAt(p: CapPeriod, now = new Date()): string {
  const d =
    p === 'day'
      ? Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)
      : Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  return new Date(d).toISOString();
}

/** The caps with what the holder used of each in the current period (the console's view). */
export async function viewGuardrails(
  em: EntityManager,
  appId: string,
  holder: Holder,
  g: Guardrails | null,
): Promise<GuardrailsView> {
  const caps = g ?? NO_GUARDRAILS;
  const with_ = async <T extends { amount: number; period: CapPeriod }>(cap: T, key: Charge['cap']) => {
    const used = await usedOf(em, appId, holder, { cap: key, period: cap.period });
    return { ...cap, used, left: Math.max(0, cap.amount - used), resets_at: resetsAt(cap.period) };
  };
  return {
    spend_cap: caps.spend_cap
      ? await with_(caps.spend_cap, { kind: 'spend', currency: caps.spend_cap.currency })
      : null,
    usage_caps: await Promise.all(
      caps.usage_caps.map((c) => with_(c, { kind: 'usage', entitlementId: c.entitlement_id })),
    ),
  };
}

/** The charges a call makes on the holder's caps (none when no cap applies). */
export function chargesOf(
  g: Guardrails,
  spend: { amount: number; currency: string } | null,
  usage: { entitlementId: string; amount: number } | null,
): Charge[] | { wrongCurrency: string } {
  const out: Charge[] = [];
  if (spend && g.spend_cap) {
    if (spend.currency.toUpperCase() !== g.spend_cap.currency) return { wrongCurrency: spend.currency.toUpperCase() };
    out.push({
      cap: { kind: 'spend', currency: g.spend_cap.currency },
      limit: g.spend_cap.amount,
      period: g.spend_cap.period,
      amount: spend.amount,
    });
  }
  const uc = usage && usage.amount > 0 ? g.usage_caps.find((c) => c.entitlement_id === usage.entitlementId) : null;
  if (usage && uc)
    out.push({
      cap: { kind: 'usage', entitlementId: uc.entitlement_id },
      limit: uc.amount,
      period: uc.period,
      amount: usage.amount,
    });
  return out;
}

const PER: Record<CapPeriod, string> = { day: 'per day (UTC)', month: 'per calendar month (UTC)' };
const THIS: Record<CapPeriod, string> = { day: 'today', month: 'this month' };

/** Who raises the holder's caps, and where. */
function howToRaise(appId: string, holder: Holder) {
  return holder.kind === 'keys'
    ? {
        who: "an operator of the app (an admin or developer of the app's workspace)",
        console: 'Console, MCP page, "Key guard-rails"',
        api: `PATCH /apps/${appId}/mcp/settings with key_guardrails`,
      }
    : {
        who:
          "an operator of the app (an admin or developer of the app's workspace), or the person who approved the " +
          'connection, by signing in again',
        console:
          'Console, MCP page, Connections, "Guard-rails" of this connection (or the consent page on a new sign-in)',
        api: `PATCH /apps/${appId}/mcp/connections/${holder.id} with guardrails`,
      };
}

const fmt = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(2));

/** The refusal of a call that would pass a cap: which cap, how much is left, how to raise it (403). */
export function capRefusal(appId: string, holder: Holder, c: Charge, used: number): AppError {
  const left = Math.max(0, c.limit - used);
  const raise = howToRaise(appId, holder);
  const who = holder.kind === 'keys' ? "This app's key-based MCP use" : 'This connection';
  const message =
    c.cap.kind === 'spend'
      ? `Spend cap reached: ${who.toLowerCase()} may start checkouts and plan changes worth ${fmt(c.limit)} ` +
        `${c.cap.currency} ${PER[c.period]}; ${fmt(used)} started ${THIS[c.period]}, ${fmt(left)} left, this call ` +
        `would start ${fmt(c.amount)}. Nothing was started.`
      : `Usage cap reached: ${who.toLowerCase()} may record ${fmt(c.limit)} of ${c.cap.entitlementId} ` +
        `${PER[c.period]}; ${fmt(used)} recorded ${THIS[c.period]}, ${fmt(left)} left, this call would record ` +
        `${fmt(c.amount)}. Nothing was recorded.`;
  return new AppError(403, `${message} To raise it: ${raise.who}, in the ${raise.console}, or ${raise.api}.`, {
    cap_reached: {
      cap:
        c.cap.kind === 'spend'
          ? { kind: 'spend', currency: c.cap.currency, amount: c.limit, period: c.period }
          : { kind: 'usage', entitlement_id: c.cap.entitlementId, amount: c.limit, period: c.period },
      used,
      left,
      requested: c.amount,
      resets_at: resetsAt(c.period),
      raise,
    },
  });
}

/** A spend in another currency than the cap's cannot be counted: refused the same way. */
export function currencyRefusal(appId: string, holder: Holder, g: Guardrails, currency: string): AppError {
  const raise = howToRaise(appId, holder);
  return new AppError(
    403,
    `Spend cap: this call would start a charge in ${currency}, and the spend cap is in ${g.spend_cap!.currency}, so ` +
      `it cannot be counted. Nothing was started. To change the cap's currency: ${raise.who}, in the ` +
      `${raise.console}, or ${raise.api}.`,
    {
      cap_reached: {
        cap: { kind: 'spend', ...g.spend_cap! },
        used: null,
        left: null,
        requested: null,
        currency,
        raise,
      },
    },
  );
}
