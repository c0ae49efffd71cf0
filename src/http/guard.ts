import type { EntityManager } from '@mikro-orm/postgresql';
import type { IApp } from '../apps/apps.entities.js';
import type { Deps } from '../deps.js';
import { AppError } from '../errors.js';
import { Reply, ROLES, type Caller, type Role, type RouteDef } from './route.js';

/** Whether a route changes anything: its declared fact, else every method but GET. */
export const writes = (def: RouteDef): boolean => def.writes ?? def.method !== 'GET';

/** Admin-only routes under `/apps/:appId` (MCP settings, connections, calls, agent threads, import). */
const adminOnly = (def: RouteDef) => def.auth.length === 1 && def.auth[0] === 'A';

/**
 * The least role a person needs on a route through the console: the route's own `role`, else viewer for reads and
 * member for writes; on admin-only app routes (MCP settings, connections) admin for writes.
 */
export function requiredRole(def: RouteDef): Role {
  if (def.role) return def.role;
  if (adminOnly(def)) return writes(def) ? 'admin' : 'viewer';
  return writes(def) ? 'member' : 'viewer';
}

export const roleAtLeast = (role: Role | null, least: Role) =>
  role !== null && ROLES.indexOf(role) >= ROLES.indexOf(least);

export const READ_ONLY_APP =
  'This app is in the demo workspace, which is read-only: everything in it can be read, nothing can be changed';

/**
 * The one guard after authentication, on the matched route's declared facts and the caller's identity (never the
 * path's spelling; tenancy was settled by authentication):
 *
 * - a read-only app (the demo workspace's) refuses every write with 403, whatever the credential (secret or
 *   publishable key, account token, MCP, a person), unless the route exempts this write; only the admin key, the
 *   operator's own, may change it;
 * - a person may use a route only with the role it needs (`requiredRole`).
 */
export async function guard(
  def: RouteDef,
  s: { caller: Caller; app: IApp | null; em: EntityManager; deps: Deps; params: Record<string, string> },
): Promise<void> {
  const { caller, app } = s;
  if (app?.readOnly && writes(def) && caller.kind !== 'admin') {
    const exempt = def.readOnlyExempt
      ? await def.readOnlyExempt({ em: s.em, deps: s.deps, app, params: s.params })
      : false;
    if (!exempt) throw new AppError(403, READ_ONLY_APP, { reason: 'read_only' });
    // What a read-only app allows, it allows every reader (the demo's visitors are viewers).
    return;
  }
  if (caller.kind === 'person' && app) {
    const least = requiredRole(def);
    if (!roleAtLeast(caller.role, least))
      throw new AppError(
        403,
        `Your role in this workspace (${caller.role ?? 'none'}) cannot do this: it takes ${least} or above`,
        {
          reason: 'role',
        },
      );
  }
}

/** A person's answer without the route's secret fields (`[redacted]`): those are shown only by a reveal action. */
export function redactSecrets(def: RouteDef, reply: Reply): Reply {
  const keys = def.secretFields;
  if (!keys?.length || reply.body === null || typeof reply.body !== 'object') return reply;
  const hide = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(hide);
    if (v === null || typeof v !== 'object') return v;
    return Object.fromEntries(
      Object.entries(v).map(([k, x]) => [k, keys.includes(k) && typeof x === 'string' ? '[redacted]' : hide(x)]),
    );
  };
  return new Reply(reply.status, hide(reply.body), reply.headers, reply.contentType);
}
