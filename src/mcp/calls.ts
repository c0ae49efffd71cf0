import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { deleteInBatches, sql } from '../db/sql.js';
import { cursorAtSql, cursorPage, cursorQuery } from '../http/pagination.js';
import { randomToken } from '../ids.js';
import { iso } from '../time.js';

/** Results longer than this are cut in the call log (the caller still gets the whole result). */
export const LOGGED_RESULT_MAX = 20_000;
export const CALL_RETENTION_DAYS = 30;

export async function logCall(
  em: EntityManager,
  c: {
    appId: string;
    connectionId: string | null;
    tool: string;
    args: Record<string, unknown>;
    status: number;
    isError: boolean;
    result: string;
    durationMs: number;
  },
): Promise<void> {
  const truncated = c.result.length > LOGGED_RESULT_MAX;
  await sql(
    em,
    `insert into mcp_calls (id, app_id, connection_id, tool, arguments, status, is_error, result, truncated,
      duration_ms) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [
      `mcl_${randomToken(20)}`,
      c.appId,
      c.connectionId,
      c.tool,
      JSON.stringify(c.args ?? {}),
      c.status,
      c.isError,
      truncated ? c.result.slice(0, LOGGED_RESULT_MAX) : c.result,
      truncated,
      Math.round(c.durationMs),
    ],
  );
}

export const callsQuery = cursorQuery(50, 100).extend({
  connection_id: z.string().max(255).optional(),
});

export const callSchema = z.object({
  id: z.string(),
  connection_id: z.string().nullable(),
  tool: z.string(),
  arguments: z.record(z.string(), z.unknown()),
  status: z.number(),
  is_error: z.boolean(),
  result: z.string(),
  truncated: z.boolean(),
  duration_ms: z.number(),
  created_at: z.string(),
});

interface CallRow {
  id: string;
  connection_id: string | null;
  tool: string;
  arguments: Record<string, unknown>;
  status: number;
  is_error: boolean;
  result: string;
  truncated: boolean;
  duration_ms: number;
  created_at: Date;
}

/** The call log of the last 30 days, newest first. */
export async function listCalls(em: EntityManager, appId: string, q: z.output<typeof callsQuery>) {
  const params: unknown[] = [appId, q.connection_id ?? null, CALL_RETENTION_DAYS, q.limit + 1];
  let after = '';
  if (q.cursor) {
    params.push(q.cursor.at, q.cursor.id);
    after = 'and (created_at, id) < ($5::timestamptz, $6::text)';
  }
  const rows = await sql<CallRow & { cursor_at: string }>(
    em,
    `select id, connection_id, tool, arguments, status, is_error, result, truncated, duration_ms, created_at,
      ${cursorAtSql('created_at')} as cursor_at from mcp_calls
      where app_id = $1 and ($2::text is null or connection_id = $2) and created_at > now() - make_interval(days => $3)
      ${after} order by created_at desc, id desc limit $4`,
    params,
  );
  const page = cursorPage(rows, q.limit, (r) => ({ at: r.cursor_at, id: r.id }));
  return {
    data: page.rows.map(({ cursor_at: _at, ...r }) => ({ ...r, created_at: iso(new Date(r.created_at))! })),
    next_cursor: page.next_cursor,
  };
}

/** Deletes calls older than the retention window, in batches (run by the hourly retention workflow). */
export function purgeOldCalls(em: EntityManager): Promise<number> {
  return deleteInBatches(
    em,
    `delete from mcp_calls where id in (select id from mcp_calls where created_at < now() - make_interval(days => $1)
      limit $2) returning 1`,
    [CALL_RETENTION_DAYS],
  );
}

/**
 * Key sessions (a secret or admin key's `initialize`) unused for the retention window: a client that
 * initializes on every request leaves one per request, and nothing else ends them. OAuth
 * connections stay until removed or revoked.
 */
export function purgeIdleKeySessions(em: EntityManager): Promise<number> {
  return deleteInBatches(
    em,
    `delete from mcp_connections where id in (
       select id from mcp_connections where kind in ('secret_key', 'admin_key') and coalesce(last_used_at,
         created_at) < now() - make_interval(days => $1) limit $2)
     returning 1`,
    [CALL_RETENTION_DAYS],
  );
}
