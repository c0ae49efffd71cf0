import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { sql } from '../db/sql.js';
import { badRequest, notFound } from '../errors.js';
import { randomToken } from '../ids.js';
import { iso } from '../time.js';
import type { ConnectionKind, Guardrails, Level } from './mcp.entities.js';
import { guardrailsView, NO_GUARDRAILS, viewGuardrails, type GuardrailsInput, mergeGuardrails } from './guardrails.js';
import { covers } from './settings.js';

/**
 * Key sessions kept per app: `initialize` with a key reuses the session of the same client name, and the least
 * recently used ones beyond this many are removed, so initialize calls (a demo app's public key, a client that
 * never sends `Mcp-Session-Id` back) cannot add rows without bound.
 */
export const KEY_SESSIONS_PER_APP = 100;
/** The class of the advisory lock that orders one app's key-session prunes (the other half is the app id's hash). */
const KEY_PRUNE_LOCK = 727275;

export const newConnectionId = () => `mcn_${randomToken(20)}`;

export const connectionSchema = z.object({
  id: z.string(),
  kind: z.enum(['oauth', 'secret_key', 'admin_key']),
  name: z.string(),
  client_id: z.string().nullable(),
  user: z.object({ id: z.string(), name: z.string().nullable(), email: z.string().nullable() }).nullable(),
  access_level: z.enum(['read', 'write', 'full']).nullable(),
  /**
   * What an OAuth connection can really do now: its level, lowered to the app's MCP cap (the highest level of a
   * tool switched on for OAuth connections). Null for key sessions (keys call every tool).
   */
  effective_level: z.enum(['read', 'write', 'full']).nullable(),
  created_at: z.string(),
  last_used_at: z.string().nullable(),
  calls_last_7_days: z.number(),
  /** Set when the connection's tokens were revoked by the service (e.g. a refresh token used twice). */
  cut_off: z.object({ at: z.string(), reason: z.string() }).nullable(),
  /**
   * An OAuth connection's guard-rails (spend cap, usage caps) with what it used in the current period; null for key
   * sessions, which share the app's key guard-rails (the MCP settings).
   */
  guardrails: guardrailsView.nullable(),
});

interface Row {
  id: string;
  kind: ConnectionKind;
  name: string;
  client_id: string | null;
  user_id: string | null;
  user_name: string | null;
  user_email: string | null;
  access_level: Level | null;
  created_at: Date;
  last_used_at: Date | null;
  cut_off_at: Date | null;
  cut_off_reason: string | null;
  guardrails: Guardrails | null;
  calls: string | number;
}

/** Connections, most recently used first (never used last), with their tool calls of the last 7 days. */
export async function listConnections(em: EntityManager, appId: string, cap: Level) {
  const rows = await sql<Row>(
    em,
    `select c.*, (select count(*) from mcp_calls m where m.connection_id = c.id and m.created_at > now() - interval
      '7 days') as calls
       from mcp_connections c where c.app_id = $1
      order by c.last_used_at desc nulls last, c.created_at desc, c.id`,
    [appId],
  );
  return Promise.all(rows.map((r) => presentConnection(em, appId, r, cap)));
}

async function presentConnection(em: EntityManager, appId: string, r: Row, cap: Level) {
  return {
    id: r.id,
    kind: r.kind,
    name: r.name,
    client_id: r.client_id,
    user: r.user_id === null ? null : { id: r.user_id, name: r.user_name, email: r.user_email },
    access_level: r.access_level,
    effective_level: r.access_level === null ? null : covers(cap, r.access_level) ? r.access_level : cap,
    created_at: iso(r.created_at)!,
    last_used_at: iso(r.last_used_at),
    calls_last_7_days: Number(r.calls),
    cut_off: r.cut_off_at ? { at: iso(r.cut_off_at)!, reason: r.cut_off_reason ?? '' } : null,
    guardrails:
      r.kind === 'oauth' ? await viewGuardrails(em, appId, { kind: 'connection', id: r.id }, r.guardrails) : null,
  };
}

/**
 * Sets an OAuth connection's guard-rails (an operator): the fields sent replace theirs, in one statement (`||` on
 * the stored object), so two changes of different caps do not undo each other. Key sessions share the app's key
 * guard-rails (400: change them in the MCP settings).
 */
export async function setConnectionGuardrails(
  em: EntityManager,
  appId: string,
  id: string,
  input: GuardrailsInput,
  cap: Level,
) {
  const changes = mergeGuardrails({ ...NO_GUARDRAILS }, input);
  const sent = Object.fromEntries(Object.keys(input).map((k) => [k, changes[k as keyof Guardrails]]));
  const [row] = await sql<Row>(
    em,
    `update mcp_connections
        set guardrails = coalesce(guardrails, '{"spend_cap": null, "usage_caps": []}'::jsonb) || $3::jsonb
      where app_id = $1 and id = $2 and kind = 'oauth'
      returning *, (select count(*) from mcp_calls m where m.connection_id = mcp_connections.id
                     and m.created_at > now() - interval '7 days') as calls`,
    [appId, id, JSON.stringify(sent)],
  );
  if (row) return presentConnection(em, appId, row, cap);
  const [other] = await sql(em, 'select 1 from mcp_connections where app_id = $1 and id = $2', [appId, id]);
  if (other)
    throw badRequest(
      "guardrails: a key session shares the app's key guard-rails; set key_guardrails in the MCP settings instead",
    );
  throw notFound('Connection');
}

/** Removes a connection: its tokens and pending codes go with it (foreign keys), so it is cut off on its next call. */
export async function deleteConnection(em: EntityManager, appId: string, id: string) {
  const rows = await sql(em, 'delete from mcp_connections where app_id = $1 and id = $2 returning id', [appId, id]);
  if (rows.length === 0) throw notFound('Connection');
  await sql(em, 'delete from mcp_cap_counters where app_id = $1 and holder = $2', [appId, id]);
  return { deleted: true as const, id };
}

/** A secret- or admin-key session, recorded at `initialize` and named from the client's `clientInfo.name`. */
export async function recordKeyConnection(
  em: EntityManager,
  appId: string,
  kind: 'secret_key' | 'admin_key',
  name: string,
  elicitation = false,
): Promise<string> {
  const label = name.slice(0, 200) || 'MCP client';
  const [row] = await sql<{ id: string }>(
    em,
    `with reused as (
       update mcp_connections set last_used_at = now(), elicitation = $5
        where id = (select id from mcp_connections where app_id = $2 and kind = $3 and name = $4
                     order by last_used_at desc nulls last limit 1)
        returning id)
     , made as (
       insert into mcp_connections (id, app_id, kind, name, last_used_at, elicitation)
       select $1, $2, $3, $4, now(), $5 where not exists (select 1 from reused)
       returning id)
     select id from reused union all select id from made`,
    [newConnectionId(), appId, kind, label, elicitation],
  );
  // Concurrent initializes prune one after another: each takes the app's prune lock (a transaction-scoped advisory
  // lock), so each delete's snapshot, taken once the lock is held, sees every row committed before it, and exactly
  // the most recent KEY_SESSIONS_PER_APP stay. (Concurrent deletes with SKIP LOCKED left some over when initializes
  // arrived close together: a delete skips the rows another has locked, and that other saw fewer rows.)
  await em.transactional(async (t) => {
    await sql(t, 'select pg_advisory_xact_lock($1, hashtext($2))', [KEY_PRUNE_LOCK, appId]);
    await sql(
      t,
      `delete from mcp_connections where id in (
         select id from mcp_connections where app_id = $1 and kind <> 'oauth'
          order by last_used_at desc nulls last, created_at desc offset $2)`,
      [appId, KEY_SESSIONS_PER_APP],
    );
  });
  return row.id;
}

/** Marks a connection used; for a key session id, also checks it belongs to this app (null when unknown). */
export async function touchConnection(
  em: EntityManager,
  appId: string,
  id: string,
  kinds: ConnectionKind[],
): Promise<{ id: string; guardrails: Guardrails | null; elicitation: boolean } | null> {
  const [row] = await sql<{ id: string; guardrails: Guardrails | null; elicitation: boolean }>(
    em,
    `update mcp_connections set last_used_at = now() where id = $1 and app_id = $2 and kind = any($3)
      returning id, guardrails, elicitation`,
    [id, appId, kinds],
  );
  return row ?? null;
}
