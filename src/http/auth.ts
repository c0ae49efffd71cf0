import type { Context } from 'koa';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { IApp } from '../apps/apps.entities.js';
import { prepared } from '../db/sql.js';
import type { Deps } from '../deps.js';
import { verifyAccountToken } from './account-token.js';
import { notFound, unauthorized } from './errors.js';
import type { Caller, RouteDef } from './route.js';
import { safeEqual } from './secrets.js';
import { verifyAccessToken } from '../oauth/tokens.js';

export function bearer(ctx: Context): string | null {
  const header = ctx.get('Authorization');
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1] : null;
}

interface AppRow {
  id: string;
  name: string;
  plan: string | null;
  api_key: string;
  public_key: string;
  checkout_url: string | null;
  created_at: Date | string;
  updated_at: Date | string;
}

/**
 * The app with this id, read with a prepared statement. A plain record: services that change the app
 * load its entity. Requests go through `requestApp` (the process's credential cache).
 */
export async function loadApp(em: EntityManager, id: string): Promise<IApp | null> {
  const [r] = await prepared<AppRow>(
    em,
    'app_by_id',
    'select id, name, plan, api_key, public_key, checkout_url, created_at, updated_at from apps where id = $1',
    [id],
  );
  if (!r) return null;
  return {
    id: r.id,
    name: r.name,
    plan: r.plan,
    apiKey: r.api_key,
    publicKey: r.public_key,
    checkoutUrl: r.checkout_url,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  } as IApp;
}

/** The app of a request: from the credential cache, which reads it with `loadApp` when it must. */
export function requestApp(em: EntityManager, deps: Deps, id: string): Promise<IApp | null> {
  return deps.credentials.app(id, () => loadApp(em, id));
}

/**
 * Decides who is calling and whether that credential class may use this route.
 * Anything missing, wrong or not allowed here is the same 401, so nothing leaks which it was.
 */
export async function authenticate(
  def: RouteDef,
  params: Record<string, string>,
  credential: string | null,
  em: EntityManager,
  deps: Deps,
): Promise<{ caller: Caller; app: IApp | null }> {
  const appId = params.appId as string | undefined;
  const isAdmin = credential !== null && safeEqual(credential, deps.adminKey);
  // Open routes ignore credentials; their handlers answer 404 when they need an app that is missing.
  if (def.auth.includes('N')) {
    const app = appId ? await requestApp(em, deps, appId) : null;
    return { caller: isAdmin ? { kind: 'admin' } : { kind: 'none' }, app };
  }
  if (credential === null) throw unauthorized();
  const app = appId ? await requestApp(em, deps, appId) : null;
  if (isAdmin) {
    if (appId && !app) throw notFound('App');
    return { caller: { kind: 'admin' }, app };
  }
  // Without an app in the path only the admin key works; an unknown app and a wrong key look alike.
  if (!app) throw unauthorized();

  let caller: Caller | null = null;
  if (credential.startsWith('key_') && safeEqual(credential, app.apiKey)) caller = { kind: 'secret' };
  else if (credential.startsWith('pub_') && safeEqual(credential, app.publicKey)) caller = { kind: 'publishable' };
  else if (credential.startsWith('act_')) {
    const t = verifyAccountToken(credential, app.id, app.apiKey);
    if (t) caller = { kind: 'token', accountId: t.accountId, expiresAt: t.expiresAt };
  } else if (credential.startsWith('mcp_at_') && def.auth.includes('O'))
    caller = await verifyAccessToken(em, app.id, credential);

  const allowed =
    (caller?.kind === 'secret' && def.auth.includes('S')) ||
    (caller?.kind === 'publishable' && def.auth.includes('P')) ||
    (caller?.kind === 'oauth' && def.auth.includes('O')) ||
    // A token reads only its own account's routes.
    (caller?.kind === 'token' &&
      def.auth.includes('T') &&
      (params.accountId === undefined || params.accountId === caller.accountId));
  if (!allowed || caller === null) throw unauthorized();
  return { caller, app };
}
