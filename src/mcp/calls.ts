import type { EntityManager } from '@mikro-orm/postgresql';
import type { Orm } from '../db/orm.js';
import type { Logger } from '../logger.js';
import { z } from 'zod';
import { lazyFork } from '../db/lazy-em.js';
import { deleteInBatches, sql } from '../db/sql.js';
import { cursorAtSql, cursorPage, cursorQuery } from '../http/pagination.js';
import { randomToken } from '../ids.js';
import { iso } from '../time.js';

/** Results longer than this are cut in the call log (the caller still gets the whole result). */
export const LOGGED_RESULT_MAX = 20_000;
export const CALL_RETENTION_DAYS = 30;

export interface CallRecord {
  appId: string;
  connectionId: string | null;
  tool: string;
  args: Record<string, unknown>;
  status: number;
  isError: boolean;
  result: string;
  durationMs: number;
}

interface CallLog {
  queue: (CallRecord & { at: Date })[];
  /** The write under way, if any. */
  writing: Promise<void> | null;
  /** Ends the wait before the next batch (`flushCalls`). */
  wake: (() => void) | null;
}

/**
 * How long a logged call waits for others to join its batch: one insert (and its commit) per call cost the
 * database as much as the route's own statement when calls come one at a time.
 */
const LOG_DELAY_MS = 25;

const logs = new WeakMap<Orm, CallLog>();
/** The most rows one insert carries. */
const LOG_BATCH = 500;

/**
 * Logs a tool call. The row is queued and written after the answer, with the other calls queued meanwhile, in one
 * statement: a call waits for no write of its own (the log was half of an MCP call's time), and the database gets
 * one insert per batch (LOG_DELAY_MS) instead of one per call. `flushCalls` waits for the queue (the call list and
 * shutdown do); a row whose app was deleted meanwhile is dropped with it.
 */
export function logCall(orm: Orm, logger: Logger, c: CallRecord): void {
  let log = logs.get(orm);
  if (!log) logs.set(orm, (log = { queue: [], writing: null, wake: null }));
  log.queue.push({ ...c, at: new Date() });
  if (!log.writing) log.writing = writeQueued(orm, log, logger);
}

async function writeQueued(orm: Orm, log: CallLog, logger: Logger): Promise<void> {
  // Calls answered meanwhile join the batch.
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => wake(), LOG_DELAY_MS);
    const wake = () => {
      clearTimeout(timer);
      log.wake = null;
      resolve();
    };
    log.wake = wake;
  });
  try {
    while (log.queue.length) {
      const batch = log.queue.splice(0, LOG_BATCH);
      try {
        await insertCalls(lazyFork(orm.em), batch);
      } catch (err) {
        logger.warn({ err, calls: batch.length }, 'MCP call log: a batch could not be written and is dropped');
      }
    }
  } finally {
    log.writing = null;
  }
}

function insertCalls(em: EntityManager, batch: (CallRecord & { at: Date })[]) {
  const col = <T>(f: (c: CallRecord & { at: Date }) => T) => batch.map(f);
  return sql(
    em,
    `insert into mcp_calls (id, app_id, connection_id, tool, arguments, status, is_error, result, truncated,
      duration_ms, created_at)
     select u.* from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::int[], $7::bool[],
       $8::text[], $9::bool[], $10::int[], $11::timestamptz[]) as u(id, app_id, connection_id, tool, arguments,
       status, is_error, result, truncated, duration_ms, created_at)
     where exists (select 1 from apps a where a.id = u.app_id)`,
    [
      col(() => `mcl_${randomToken(20)}`),
      col((c) => c.appId),
      col((c) => c.connectionId),
      col((c) => c.tool),
      col((c) => JSON.stringify(c.args ?? {})),
      col((c) => c.status),
      col((c) => c.isError),
      col((c) => (c.result.length > LOGGED_RESULT_MAX ? c.result.slice(0, LOGGED_RESULT_MAX) : c.result)),
      col((c) => c.result.length > LOGGED_RESULT_MAX),
      col((c) => Math.round(c.durationMs)),
      col((c) => c.at),
    ],
  );
}

/** Waits until every call logged so far in this process is written. */
export async function flushCalls(orm: Orm): Promise<void> {
  const log = logs.get(orm);
  while (log?.writing) {
    log.wake?.();
    await log.writing;
  }
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
