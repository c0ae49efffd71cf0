import type { Context } from 'koa';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { IApp } from '../apps/apps.entities.js';
import { prepared } from '../db/sql.js';
import type { Deps } from '../deps.js';
import { verifyAccountToken } from './account-token.js';
import { notFound, unauthorized, UnrecognizedCredential } from '../errors.js';
import { AppError } from '../errors.js';
import type { Caller, Person, Role, RouteDef } from './route.js';
import { safeEqual } from './secrets.js';

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
  plan_change_policy: IApp['planChangePolicy'];
  read_only: boolean;
  clock_offset_ms: string | number;
  dunning: IApp['dunning'];
  created_at: Date | string;
  updated_at: Date | string;
  publishable_first_used_at: Date | string | null;
}

/**
 * The app with this id, read with a prepared statement. A plain record: services that change the app
 * load its entity. Requests go through `requestApp` (the process's credential cache).
 */
export async function loadApp(em: EntityManager, id: string): Promise<IApp | null> {
  const [r] = await prepared<AppRow>(
    em,
    'app_by_id',
    'select id, name, plan, api_key, public_key, checkout_url, plan_change_policy, read_only, clock_offset_ms, ' +
      'dunning, publishable_first_used_at, created_at, updated_at from apps where id = $1',
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
    planChangePolicy: r.plan_change_policy ?? null,
    readOnly: r.read_only,
    // The test clock and dunning settings: a request's services compute app time from the record (a moved clock
    // reaches every process's cache before the move answers).
    clockOffsetMs: Number(r.clock_offset_ms ?? 0),
    dunning: r.dunning ?? null,
    publishableFirstUsedAt: r.publishable_first_used_at ? new Date(r.publishable_first_used_at) : null,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  } as IApp;
}

/**
 * Records the first use of an app's publishable key, once: the update matches only while the column is null (so
 * concurrent first requests set it once), and the apps trigger then refreshes every process's cached app, after
 * which this is not called again.
 */
async function markPublishableUse(em: EntityManager, appId: string): Promise<void> {
  await prepared(
    em,
    'app_publishable_first_use',
    'update apps set publishable_first_used_at = now() where id = $1 and publishable_first_used_at is null',
    [appId],
  );
}

/**
 * Whether a publishable-key request came from a page that embeds the components: a browser sends `Origin` with the
 * page's http(s) origin on every cross-origin request, and a page embedding them is on the operator's own site, never
 * on this service's origin. A server-side call (the SDK from a backend, curl) sends no Origin, and a sandboxed frame
 * or a file sends `null`: neither counts (the getting-started checklist's "components embedded" step).
 */
export function embeddedIn(headers: Record<string, string | undefined>, ownOrigin: string): boolean {
  const origin = headers.origin;
  if (!origin || !/^https?:\/\/[^/\s]+$/i.test(origin)) return false;
  return origin.toLowerCase() !== ownOrigin.toLowerCase();
}

/** The app of a request: from the credential cache, which reads it with `loadApp` when it must. */
export function requestApp(em: EntityManager, deps: Deps, id: string): Promise<IApp | null> {
  return deps.credentials.app(id, () => loadApp(em, id));
}

/**
 * People, as the console's surface needs them (src/people): who a session cookie belongs to, and a person's role in
 * the workspace that holds an app (null when no workspace of theirs does). Tenancy is this one question, asked of
 * the service's own membership table, never of a name or slug a person can change.
 */
export interface Identity {
  person(headers: Record<string, string | undefined>): Promise<Person | null>;
  roleIn(userId: string, appId: string): Promise<{ role: Role; workspaceId: string } | null>;
}

/** Why a cookie-carrying state change is refused as cross-site, or null (see `crossSite`). */
export type CrossSiteCheck = (headers: Record<string, string | undefined>, origin: string) => string | null;

/**
 * Why a state-changing call with a person's cookie is refused as cross-site, or null when it came from the
 * console's own pages: its Origin must be this service's origin (or APP_URL's). Browsers send Origin on every
 * non-GET fetch; without one, Fetch Metadata must say `same-origin`, else the call is refused. `Origin: null`
 * (sandboxed frames, some redirects) is refused.
 */
export function crossSite(
  method: string,
  headers: Record<string, string | undefined>,
  ownOrigin: string,
  appUrl: string | undefined,
): string | null {
  if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') return null;
  const trusted = new Set([ownOrigin, ...(appUrl ? [new URL(appUrl).origin] : [])]);
  const origin = headers.origin;
  if (origin) return trusted.has(origin) ? null : `Cross-site request refused (Origin ${origin})`;
  if (headers['sec-fetch-site'] === 'same-origin') return null;
  return 'Cross-site request refused (no Origin header)';
}

/** A person through their session cookie: on the console's surface of an app route, or on a console route (C). */
async function personCaller(
  def: RouteDef,
  appId: string | undefined,
  em: EntityManager,
  deps: Deps,
  how: { headers: Record<string, string | undefined>; origin: string; identity?: Identity },
): Promise<{ caller: Caller; app: IApp | null }> {
  if (!how.identity) throw unauthorized();
  const person = await how.identity.person(how.headers);
  if (!person) throw unauthorized();
  // A cookie rides along on cross-site requests too: a state change must come from the console's own pages.
  const refused = crossSite(def.method, how.headers, how.origin, deps.config.APP_URL);
  if (refused) throw new AppError(403, refused);
  if (!appId) return { caller: { kind: 'person', ...person, role: null, workspaceId: null }, app: null };
  // Another tenant's app and a missing one look alike.
  const membership = await how.identity.roleIn(person.userId, appId);
  const app = membership ? await requestApp(em, deps, appId) : null;
  if (!membership || !app) throw notFound('App');
  return { caller: { kind: 'person', ...person, role: membership.role, workspaceId: membership.workspaceId }, app };
}

/**
 * Decides who is calling and whether that credential class may use this route.
 * Anything missing, wrong or not allowed here is the same 401, so nothing leaks which it was.
 * On the console's surface the caller is the person of the session cookie, and the app must be in one of their
 * workspaces (404 otherwise); keys are not looked at there.
 */
export async function authenticate(
  def: RouteDef,
  params: Record<string, string>,
  credential: string | null,
  em: EntityManager,
  deps: Deps,
  how: {
    surface: 'api' | 'console';
    headers: Record<string, string | undefined>;
    origin: string;
    identity?: Identity;
  } = { surface: 'api', headers: {}, origin: '' },
): Promise<{ caller: Caller; app: IApp | null }> {
  const appId = params.appId as string | undefined;
  if (how.surface === 'console' || def.auth.includes('C')) return personCaller(def, appId, em, deps, how);
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
  // Without an app in the path only the admin key works; an unknown app and a wrong key look alike (and count as
  // a guess at the admin key).
  if (!app) throw new UnrecognizedCredential();

  let caller: Caller | null = null;
  if (credential.startsWith('key_') && safeEqual(credential, app.apiKey)) caller = { kind: 'secret' };
  else if (credential.startsWith('pub_') && safeEqual(credential, app.publicKey)) caller = { kind: 'publishable' };
  else if (credential.startsWith('act_')) {
    const t = verifyAccountToken(credential, app.id, app.apiKey);
    if (t) caller = { kind: 'token', accountId: t.accountId, expiresAt: t.expiresAt };
  } else if (credential.startsWith('mcp_at_') && def.auth.includes('O'))
    caller = await deps.verifyAccessToken(em, app.id, credential);

  const allowed =
    (caller?.kind === 'secret' && def.auth.includes('S')) ||
    (caller?.kind === 'publishable' && def.auth.includes('P')) ||
    (caller?.kind === 'oauth' && def.auth.includes('O')) ||
    // A token reads only its own account's routes.
    (caller?.kind === 'token' &&
      def.auth.includes('T') &&
      (params.accountId === undefined || params.accountId === caller.accountId));
  // A credential that matched nothing is a guess (counted by the throttle); a valid one on a route it may not use
  // gets the same 401 but is never counted against anyone.
  if (caller === null) throw new UnrecognizedCredential();
  if (!allowed) throw unauthorized();
  if (caller.kind === 'publishable' && !app.publishableFirstUsedAt && embeddedIn(how.headers, how.origin))
    await markPublishableUse(em, app.id);
  return { caller, app };
}
