import { AppError } from '../errors.js';
import { isDatabaseUnavailable, isOutcomeUnknown } from '../db/unavailable.js';
import { lazyFork } from '../db/lazy-em.js';
import { rolledBack } from '../db/transaction.js';
import { DATABASE_RETRY_AFTER_S, databaseUnavailableBody } from '../http/middleware.js';
import {
  capRefusal,
  chargesOf,
  currencyRefusal,
  giveBack,
  takeFromCap,
  usedOf,
  type Charge,
  type Holder,
} from './guardrails.js';
import type { Guardrails, Level } from './mcp.entities.js';
import type { McpSettingsView } from './settings.js';
import type { Tool, ToolCallContext } from './tools.js';
import type { ToolsetChoice } from './toolsets.js';

/**
 * What one tool call does once it may be made: its arguments checked, its caps taken (and given back when it fails),
 * the route run (or, for a dry run, what it would do), and the outcome as the client sees it, structured either way.
 */

export interface McpRequestContext extends ToolCallContext {
  settings: McpSettingsView;
  /** The OAuth connection's level; null for the secret and admin keys (everything allowed). */
  level: Level | null;
  connectionId: string | null;
  /** The tools of the route table the request is served from. */
  tools: Tool[];
  /**
   * The toolsets `tools/list` names beside the core and discovery tools (src/mcp/toolsets.ts): the request's choice,
   * else the OAuth connection's, else the app's. Listing only: every tool the caller may call stays callable.
   */
  toolsets: readonly ToolsetChoice[];
  /** Who holds the caps (the OAuth connection, or the app's key-based use) and the caps it holds. */
  holder: Holder;
  guardrails: Guardrails;
}

/**
 * A tool's outcome as the client sees it: the route's JSON as text and as `structuredContent`, or
 * `Error <status>: <message>`. An error whose body says more than its code (a 402's `message` names the upgrade
 * and its link) shows that message, and its whole body (offer, prices, `checkout_url`) is the structured content.
 */
export interface Outcome {
  status: number;
  isError: boolean;
  text: string;
  structured?: Record<string, unknown>;
  /** `structured` as JSON, when it is already at hand (the text, a success's route answer). */
  structuredJson?: string;
}

/** The caps a call counts against (its spend is quoted only when there is a spend cap, or for a dry run). */
async function chargesFor(tool: Tool, args: Record<string, unknown>, ctx: McpRequestContext, quote?: McpSpendQuote) {
  const spend = quote ?? (ctx.guardrails.spend_cap ? await tool.spends(args, ctx) : null);
  const charges = chargesOf(ctx.guardrails, spend, tool.records(args));
  if (!Array.isArray(charges)) throw currencyRefusal(ctx.app.id, ctx.holder, ctx.guardrails, charges.wrongCurrency);
  return charges;
}
type McpSpendQuote = Awaited<ReturnType<Tool['spends']>>;

/** A refusal's outcome as any error's: `Error <status>: <message>`, with the structured content `error(...)` makes. */
export const refusal = (
  status: number,
  message: string,
  extra: Record<string, unknown> = {},
  text = message,
): Outcome => ({
  status,
  isError: true,
  text: `Error ${status}: ${text}`,
  structured: { error: message, status, ...extra },
});

/**
 * A route's refusal: `Error <status>: <message>`, and as structured content the route's error body with its status
 * (`{ error, status, ...}`: a 409's `reason`, a cap's `cap_reached`, the whole 402 body with its upgrade). A 402's
 * text is its `message`, which names the upgrade and its link.
 */
export function failure(err: AppError): Outcome {
  const detail = typeof err.extra?.message === 'string' ? err.extra.message : err.message;
  return refusal(err.status, err.message, err.extra ?? {}, detail);
}

/**
 * A dry run: what the call would do, with nothing done, answered as the call would be: its caps as the call takes
 * them (read, never taken), then the route (authentication, the read-only demo, validation, lookups). Calls that
 * reach outside (the payment provider, a webhook URL) run the route's checks and are then described (with their
 * quote); the others run through their route in a transaction that is rolled back (no outbox, events or workflows
 * survive it).
 */
async function dryRun(tool: Tool, args: Record<string, unknown>, ctx: McpRequestContext): Promise<Outcome> {
  const said = (would: Record<string, unknown>, text: string): Outcome => ({
    status: 200,
    isError: false,
    text: `Dry run, nothing was done. ${text}`,
    structured: { dry_run: would },
  });
  const refused = (err: AppError, what: string) => {
    const f = failure(err);
    return said(
      { would: 'fail', status: err.status, error: f.structured },
      `${what}the call would be refused: ${f.text}`,
    );
  };
  try {
    for (const c of await chargesFor(tool, args, ctx)) {
      const used = await usedOf(ctx.deps.orm.em.fork(), ctx.app.id, ctx.holder, c);
      if (used + c.amount > c.limit) return refused(capRefusal(ctx.app.id, ctx.holder, c, used), '');
    }
    if (tool.reachesOut) {
      const { description, amount, currency } = await tool.preview(args, ctx);
      return said({ would: 'call', description, ...(amount !== undefined ? { amount, currency } : {}) }, description);
    }
    const records = tool.records(args);
    const { status, body } = await rolledBack(ctx.deps.orm.em.fork(), (em) => tool.call(args, ctx, em));
    const counted =
      records && body && typeof body === 'object' && 'count' in body
        ? `Would record ${records.amount} of ${records.entitlementId}; the count would become ${String(body.count)}. `
        : '';
    const answer = body === null || body === undefined ? '(no body)' : JSON.stringify(body);
    return said(
      { would: 'succeed', status, result: tool.structured(body) ?? null },
      `${counted}The call would succeed (${status}) and answer: ${answer}`,
    );
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    const records = tool.records(args);
    const limit = err.extra?.entitlement as { usage?: number; max?: number } | undefined;
    const counted =
      err.status === 402 && records && typeof limit?.usage === 'number'
        ? `Would record ${records.amount} of ${records.entitlementId}; the count would become ` +
          `${limit.usage + records.amount} of ${limit.max}, so `
        : '';
    return refused(err, counted);
  }
}

export async function runTool(
  tool: Tool,
  rawArgs: Record<string, unknown>,
  ctx: McpRequestContext,
  /** Run in place of the route's handler after its checks (an MCP task's start); a dry run never is. */
  start?: Parameters<Tool['call']>[3],
): Promise<Outcome> {
  const { dry_run: dry, ...args } = rawArgs;
  const taken: Charge[] = [];
  // Forked only if a cap is taken: a fork costs more CPU than a read tool's own statement (src/db/lazy-em.ts).
  const em = lazyFork(ctx.deps.orm.em);
  try {
    // Arguments the tool does not take are refused (naming them), before anything is looked up or taken.
    const problem = tool.argumentError(rawArgs);
    if (problem) throw problem;
    if (dry !== undefined && typeof dry !== 'boolean') throw new AppError(400, 'dry_run: expected true or false');
    if (dry === true && tool.writes) return await dryRun(tool, args, ctx);
    // Each cap is taken before the call, in one statement that refuses to pass it, and given back when it fails.
    // A read tool spends and records nothing, so it has no caps to look up.
    for (const c of tool.writes ? await chargesFor(tool, args, ctx) : []) {
      const used = await takeFromCap(em, ctx.app.id, ctx.holder, c);
      if (used !== null) throw capRefusal(ctx.app.id, ctx.holder, c, used);
      taken.push(c);
    }
    const { status, body } = await tool.call(args, ctx, undefined, start);
    taken.length = 0;
    const text = body === null || body === undefined ? '' : JSON.stringify(body);
    const structured = tool.structured(body);
    // The structured content is the body (or the body under `data`): its JSON is the text's.
    const structuredJson =
      structured === undefined
        ? undefined
        : structured === body
          ? text
          : Object.keys(structured).length === 1 && structured.data === body
            ? `{"data":${text}}`
            : undefined;
    return { status, isError: false, text, structured, structuredJson };
  } catch (err) {
    // What the call may have spent stays spent while its outcome is unknown; a cap given back later than it could be
    // (the database is away) only errs toward less.
    if (!isOutcomeUnknown(err))
      for (const c of taken) await giveBack(em, ctx.app.id, ctx.holder, c).catch(() => undefined);
    if (err instanceof AppError) return failure(err);
    if (isDatabaseUnavailable(err)) {
      // As over REST: a 503 the agent can retry, saying when the change may have been applied.
      const { error, ...extra } = databaseUnavailableBody(err, tool.writes ? 'POST' : 'GET');
      return refusal(
        503,
        error,
        { ...extra, retry_after: DATABASE_RETRY_AFTER_S },
        `${error} (retry after ${DATABASE_RETRY_AFTER_S} s)`,
      );
    }
    ctx.deps.logger.error({ err, requestId: ctx.requestId, tool: tool.name }, 'MCP tool failed');
    return refusal(500, 'Internal server error');
  }
}
