import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { prepared, sql } from '../db/sql.js';
import type { CredentialCache } from '../http/credential-cache.js';
import { badRequest, notFound } from '../errors.js';
import { randomToken } from '../ids.js';
import { iso } from '../time.js';
import type { ConnectionKind, Guardrails, Level } from './mcp.entities.js';
import { guardrailsView, NO_GUARDRAILS, viewGuardrails, type GuardrailsInput, mergeGuardrails } from './guardrails.js';
import { covers } from './settings.js';
import { toolsetsSchema, type ToolsetChoice } from './toolsets.js';

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
  /** An OAuth connection's own choice of toolsets for `tools/list`; null: the app's (always null for key sessions). */
  toolsets: toolsetsSchema.nullable(),
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
  toolsets: ToolsetChoice[] | null;
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
    toolsets: r.toolsets,
  };
}

/**
 * Sets an OAuth connection's guard-rails and toolsets (an operator): the guard-rail fields sent replace theirs, in one
 * statement (`||` on the stored object), so two changes of different caps do not undo each other; `toolsets`, when
 * sent, replaces the connection's choice (null: the app's). Key sessions share the app's key guard-rails and choose
 * their toolsets per request (400).
 */
export async function setConnection(
  em: EntityManager,
  appId: string,
  id: string,
  input: { guardrails?: GuardrailsInput; toolsets?: ToolsetChoice[] | null },
  cap: Level,
) {
  const changes = mergeGuardrails({ ...NO_GUARDRAILS }, input.guardrails ?? {});
  const sent = Object.fromEntries(Object.keys(input.guardrails ?? {}).map((k) => [k, changes[k as keyof Guardrails]]));
  const [row] = await sql<Row>(
    em,
    `update mcp_connections
        set guardrails = case when $3::jsonb = '{}'::jsonb then guardrails
              else coalesce(guardrails, '{"spend_cap": null, "usage_caps": []}'::jsonb) || $3::jsonb end,
            toolsets = case when $4 then $5::jsonb else toolsets end
      where app_id = $1 and id = $2 and kind = 'oauth'
      returning *, (select count(*) from mcp_calls m where m.connection_id = mcp_connections.id
                     and m.created_at > now() - interval '7 days') as calls`,
    [
      appId,
      id,
      JSON.stringify(sent),
      input.toolsets !== undefined,
      input.toolsets === undefined || input.toolsets === null ? null : JSON.stringify(input.toolsets),
    ],
  );
  if (row) return presentConnection(em, appId, row, cap);
  const [other] = await sql(em, 'select 1 from mcp_connections where app_id = $1 and id = $2', [appId, id]);
  if (other)
    throw badRequest(
      input.guardrails !== undefined
        ? "guardrails: a key session shares the app's key guard-rails; set key_guardrails in the MCP settings instead"
        : 'toolsets: a key session chooses its toolsets per request (the `toolsets` query parameter or the ' +
            "X-MCP-Toolsets header), or follows the app's (the MCP settings)",
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

/**
 * A secret- or admin-key session, recorded at `initialize` (2025 protocol versions) or at a 2026-07-28 request's
 * first sight of a client (its `_meta` names it), and named from the client's `clientInfo.name`. Reuses the most
 * recently used session of that name; `changed` says whether a reused session's `elicitation` changed (the writer
 * then announces it: processes keep a session's state, `connectionState`).
 */
export async function recordKeyConnection(
  em: EntityManager,
  appId: string,
  kind: 'secret_key' | 'admin_key',
  name: string,
  elicitation = false,
): Promise<{ id: string; changed: boolean }> {
  const label = name.slice(0, 200) || 'MCP client';
  const [row] = await sql<{ id: string; changed: boolean }>(
    em,
    `with target as (
       select id, elicitation from mcp_connections where app_id = $2 and kind = $3 and name = $4
        order by last_used_at desc nulls last limit 1 for update)
     , reused as (
       update mcp_connections c set last_used_at = now(), elicitation = $5 from target where c.id = target.id
        returning c.id, target.elicitation <> $5 as changed)
     , made as (
       insert into mcp_connections (id, app_id, kind, name, last_used_at, elicitation)
       select $1, $2, $3, $4, now(), $5 where not exists (select 1 from target)
       returning id)
     select id, changed from reused union all select id, false from made`,
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
  return row;
}

/** What a call needs of its connection: its kind, caps and whether its client declared elicitation. */
export interface ConnectionState {
  id: string;
  kind: ConnectionKind;
  guardrails: Guardrails | null;
  elicitation: boolean;
  /** The connection's own toolsets for `tools/list`; null: the app's. */
  toolsets: ToolsetChoice[] | null;
}

async function loadState(em: EntityManager, appId: string, id: string): Promise<ConnectionState | null> {
  const [row] = await prepared<ConnectionState>(
    em,
    'mcp_connection_state',
    'select id, kind, guardrails, elicitation, toolsets from mcp_connections where id = $1 and app_id = $2',
    [id, appId],
  );
  return row ?? null;
}

/**
 * A connection of this app of one of these kinds (null when unknown: a key session id from elsewhere, a removed
 * connection). Kept beside the app in this process's credential cache while it is there: a connection's change or
 * removal announces itself as the app's (migration Migration20261222090000_mcp_oauth_cache), so a call costs no
 * statement for it (`markUsed` writes `last_used_at`, at most once a minute).
 */
export async function connectionState(
  em: EntityManager,
  credentials: CredentialCache,
  appId: string,
  id: string,
  kinds: readonly ConnectionKind[],
): Promise<ConnectionState | null> {
  const state = await credentials.companion(
    appId,
    `mcp.connection:${id}`,
    () => loadState(em, appId, id),
    (s) => s !== null,
  );
  return state && kinds.includes(state.kind) ? state : null;
}

/**
 * The key session a 2026-07-28 client's requests are logged under: the app's most recent session of that credential
 * kind and client name (`_meta`'s `clientInfo.name`), made at its first request. Kept beside the app as
 * `connectionState` is.
 */
export async function keySession(
  em: EntityManager,
  credentials: CredentialCache,
  appId: string,
  kind: 'secret_key' | 'admin_key',
  name: string,
): Promise<string> {
  const label = name.slice(0, 200) || 'MCP client';
  return credentials.companion(appId, `mcp.session:${kind}:${label}`, async () => {
    const [found] = await prepared<{ id: string }>(
      em,
      'mcp_key_session',
      `select id from mcp_connections where app_id = $1 and kind = $2 and name = $3
        order by last_used_at desc nulls last limit 1`,
      [appId, kind, label],
    );
    return found?.id ?? (await recordKeyConnection(em, appId, kind, label)).id;
  });
}

/** When each connection was last marked used by this process. */
const marked = new Map<string, number>();
/** `last_used_at` is kept to the minute: a connection is marked at most this often by each process. */
export const MARK_USED_EVERY_MS = 60_000;

/** Marks a connection used (the console's "last used", the list's order), at most once a minute per process. */
export async function markUsed(em: EntityManager, id: string): Promise<void> {
  const now = Date.now();
  if ((marked.get(id) ?? -Infinity) > now - MARK_USED_EVERY_MS) return;
  marked.delete(id);
  marked.set(id, now);
  // Oldest first (a Map keeps insertion order): a bound on what this process remembers.
  while (marked.size > 10_000) marked.delete(marked.keys().next().value!);
  await prepared(em, 'mcp_connection_used', 'update mcp_connections set last_used_at = now() where id = $1', [id]);
}
