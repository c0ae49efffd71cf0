// The operator console's server side, inside the API process:
//   /console/*            the built front end (console/dist), with the SPA's index.html for unknown paths
//   /api/auth/*           Better Auth: people sign in with email and password (src/people/auth.ts)
//   /console/api/*        the console's own JSON (who am I, setup, workspaces, invitations)
//   /console/api/apps/:appId/*  the public API on the signed-in person's behalf: the session is checked, the
//                         app must be in one of their workspaces, and the request continues to the route table
//                         with that app's secret key. The browser never holds a key.
import type { RouteDef } from '../http/route.js';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import { fromNodeHeaders, toNodeHandler } from 'better-auth/node';
import type Koa from 'koa';
import { z } from 'zod';
import type { Deps } from '../deps.js';
import {
  AUTH_BASE_PATH,
  consumeSetupToken,
  countPeople,
  createWorkspace,
  DEMO_WORKSPACE_ID,
  people,
  workspacesOf,
  type People,
} from '../people/auth.js';
import { AppError } from '../http/errors.js';
import { requestOrigin } from '../http/router.js';
import { safeEqual } from '../http/secrets.js';
import { decodeComponent, illFormedMessage } from '../http/validate.js';
import { levelSchema } from '../mcp/settings.js';
import * as oauth from '../oauth/oauth.service.js';
import { isDemoReceiverUrl, receiveDemoDelivery } from '../webhooks/demo-receiver.js';
import { CONSOLE_PATH } from './urls.js';

export { CONSOLE_PATH };
export const CONSOLE_DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../console/dist');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
};

/** Routes under /apps/:appId that only the admin key may call; the console calls them for members of the app. */
const ADMIN_APP_ROUTES = /^\/apps\/[^/]+\/(mcp\/(settings|connections|calls)|agent\/threads)(\/|$)/;

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** POSTs that store nothing (previews): not writes, so the read-only demo app answers them. */
const PREVIEWS = /\/(draft-preview|preview|preview-offer)$/;
/**
 * A test send or a delivery retry: allowed on the read-only demo app when the endpoint is the demo's built-in
 * receiver, so a visitor can retry the failed delivery; it changes no demo data, only the delivery log.
 */
const DELIVERY_ACTIONS = /^\/apps\/([^/]+)\/webhooks\/([^/]+)\/(test|deliveries\/[^/]+\/retry)$/;

/** The origin the browser addressed this service at (Koa 3's `ctx.origin` is the Origin header instead). */
const ownOrigin = (ctx: Koa.Context) => `${ctx.protocol}://${ctx.host}`;

/**
 * Why a state-changing call with a person's cookie is refused as cross-site, or null when it came from the
 * console's own pages: its Origin must be this service's origin or APP_URL's. Browsers send Origin on every
 * non-GET fetch; without one, Fetch Metadata must say `same-origin` (an old browser or a privacy setting that
 * drops Origin), else the call is refused. `Origin: null` (sandboxed frames, some redirects) is refused.
 */
export function crossSite(ctx: Koa.Context, appUrl: string | undefined): string | null {
  const trusted = new Set([ownOrigin(ctx), ...(appUrl ? [new URL(appUrl).origin] : [])]);
  const origin = ctx.get('Origin');
  if (origin) return trusted.has(origin) ? null : `Cross-site request refused (Origin ${origin})`;
  if (ctx.get('Sec-Fetch-Site') === 'same-origin') return null;
  return 'Cross-site request refused (no Origin header)';
}

const bearer = (ctx: Koa.Context) => /^Bearer\s+(.+)$/i.exec(ctx.get('Authorization'))?.[1]?.trim();

const setupBody = z.object({
  token: z.string().optional(),
  name: z.string().trim().min(1).max(200),
  email: z.email().max(320),
  password: z.string().min(10).max(200),
  workspace: z.string().trim().min(1).max(200).default('My workspace'),
});
const appBody = z.object({ name: z.string().trim().min(1).max(200) });
const inviteBody = z.object({ email: z.email().max(320), role: z.enum(['member', 'admin']).default('member') });
const consentBody = z.strictObject({ access_level: levelSchema, app_id: z.string().min(1).max(255).optional() });
const acceptBody = z.object({ name: z.string().trim().min(1).max(200), password: z.string().min(10).max(200) });

function fail(ctx: Koa.Context, status: number, error: string) {
  ctx.status = status;
  ctx.body = { error };
}

function parse<T extends z.ZodType>(ctx: Koa.Context, schema: T): z.infer<T> | undefined {
  const illFormed = illFormedMessage(ctx.request.body);
  if (illFormed) return void fail(ctx, 400, illFormed);
  const r = schema.safeParse(ctx.request.body ?? {});
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  fail(ctx, 400, `${issue.path.join('.') || 'body'}: ${issue.message}`);
  return undefined;
}

const slugify = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_|_$/g, '')
    .slice(0, 40) || 'workspace';

/** `routeTable` is handed over by the app (only the app imports the table: no import circle). */
export function consoleMiddleware(deps: Deps, routeTable: readonly RouteDef[]): Koa.Middleware {
  const api = new Router({ prefix: `${CONSOLE_PATH}/api` });
  const json = bodyParser({ enableTypes: ['json'], jsonLimit: '1mb' });

  async function session(ctx: Koa.Context, p: People) {
    return p.auth.api.getSession({ headers: fromNodeHeaders(ctx.req.headers) });
  }

  // CSRF: the console's own state-changing calls must come from the console's pages. Koa 3's `ctx.origin` is the
  // request's Origin header, so the service's own origin is built from the protocol and host the browser used.
  const sameOrigin: Koa.Middleware = async (ctx, next) => {
    if (!SAFE_METHODS.has(ctx.method)) {
      const refused = crossSite(ctx, deps.config.APP_URL);
      if (refused) return fail(ctx, 403, refused);
    }
    await next();
  };

  // The MCP tools an app's server offers (from the route table), for the MCP page's per-tool switches.
  const tools = routeTable
    .filter((r) => r.mcp)
    .map((r) => ({ name: r.mcp!.tool, level: r.mcp!.level, method: r.method, path: r.path, summary: r.summary }));
  api.get('/mcp-tools', (ctx) => {
    ctx.body = tools;
  });

  api.get('/status', async (ctx) => {
    const p = await people(deps);
    ctx.body = { setup_needed: (await countPeople(p)) === 0 };
  });

  // The first owner: with the one-time setup link's token, or with the admin key.
  api.post('/setup', json, async (ctx) => {
    const p = await people(deps);
    const input = parse(ctx, setupBody);
    if (!input) return;
    const key = bearer(ctx);
    const byAdmin = key !== undefined && safeEqual(key, deps.adminKey);
    if (!byAdmin) {
      const refused = crossSite(ctx, deps.config.APP_URL);
      if (refused) return fail(ctx, 403, refused);
      if (!input.token || !(await consumeSetupToken(p, input.token)))
        return fail(ctx, 401, 'This setup link is not valid any more. Restart the service for a new one.');
    }
    if ((await countPeople(p)) > 0) return fail(ctx, 409, 'The owner is already set up. Sign in instead.');
    const { user } = await p.auth.api.signUpEmail({
      body: { name: input.name, email: input.email, password: input.password },
    });
    await createWorkspace(p, {
      id: await freeWorkspaceId(p, slugify(input.workspace)),
      name: input.workspace,
      ownerId: user.id,
    });
    ctx.status = 201;
    ctx.body = { user: { id: user.id, name: user.name, email: user.email } };
  });

  api.get('/me', async (ctx) => {
    const p = await people(deps);
    const s = await session(ctx, p);
    // Signed out is a normal state for the page, not an error: 200 with no user.
    if (!s) return void (ctx.body = { user: null, setup_needed: (await countPeople(p)) === 0 });
    const workspaces = await workspacesOf(p, s.user.id);
    const ids = [...new Set(workspaces.flatMap((w) => w.app_ids))];
    const { rows } = await p.pool.query<{ id: string; name: string }>(`select id, name from apps where id = any($1)`, [
      ids,
    ]);
    const names = new Map(rows.map((r) => [r.id, r.name]));
    ctx.body = {
      user: { id: s.user.id, name: s.user.name, email: s.user.email },
      workspaces: workspaces.map((w) => ({
        id: w.id,
        name: w.name,
        role: w.role,
        demo: w.demo,
        apps: w.app_ids.filter((id) => names.has(id)).map((id) => ({ id, name: names.get(id)! })),
      })),
      temporal_ui_url: deps.config.embeddedTemporal ? `http://127.0.0.1:${deps.config.TEMPORAL_UI_PORT}` : null,
    };
  });

  async function ownerOf(ctx: Koa.Context, p: People, workspaceId: string) {
    const s = await session(ctx, p);
    if (!s) return void fail(ctx, 401, 'Unauthorized');
    const w = (await workspacesOf(p, s.user.id)).find((x) => x.id === workspaceId);
    if (!w) return void fail(ctx, 404, 'Workspace not found');
    if (w.demo || !['owner', 'admin'].includes(w.role))
      return void fail(ctx, 403, 'Only owners and admins of this workspace can do that');
    return { session: s, workspace: w };
  }

  // A new app in a workspace: created with the admin key, appended to the workspace's app_ids.
  api.post('/workspaces/:id/apps', sameOrigin, json, async (ctx) => {
    const p = await people(deps);
    const ok = await ownerOf(ctx, p, ctx.params.id);
    if (!ok) return;
    const input = parse(ctx, appBody);
    if (!input) return;
    const res = await fetchSelf(ctx, '/apps', { method: 'POST', body: JSON.stringify(input) });
    if (res.status !== 201) return fail(ctx, res.status, (res.body as { error: string }).error);
    const created = res.body as { id: string };
    await p.pool.query(`update orgs set app_ids = app_ids || $2::jsonb, updated_at = now() where id = $1`, [
      ctx.params.id,
      JSON.stringify([created.id]),
    ]);
    ctx.status = 201;
    ctx.body = created;
  });

  api.post('/workspaces/:id/invitations', sameOrigin, json, async (ctx) => {
    const p = await people(deps);
    const ok = await ownerOf(ctx, p, ctx.params.id);
    if (!ok) return;
    const input = parse(ctx, inviteBody);
    if (!input) return;
    const org = await p.pool.query<{ id: string }>(`select id from people_workspaces where slug = $1`, [ctx.params.id]);
    const inv = await p.auth.api.createInvitation({
      headers: fromNodeHeaders(ctx.req.headers),
      body: { email: input.email, role: input.role, organizationId: org.rows[0].id },
    });
    ctx.status = 201;
    ctx.body = {
      id: inv.id,
      email: inv.email,
      role: inv.role,
      url: `${ownOrigin(ctx)}${CONSOLE_PATH}/invite/${inv.id}`,
    };
  });

  api.get('/invitations/:id', async (ctx) => {
    const p = await people(deps);
    const inv = await pendingInvitation(p, ctx.params.id);
    if (!inv) return fail(ctx, 404, 'This invitation is not valid any more');
    ctx.body = { email: inv.email, workspace: inv.workspace };
  });

  // Accepting an invitation creates the person (with the invited email) and makes them a member.
  api.post('/invitations/:id/accept', sameOrigin, json, async (ctx) => {
    const p = await people(deps);
    const inv = await pendingInvitation(p, ctx.params.id);
    if (!inv) return fail(ctx, 404, 'This invitation is not valid any more');
    const input = parse(ctx, acceptBody);
    if (!input) return;
    const exists = await p.pool.query(`select 1 from people_users where lower(email) = lower($1)`, [inv.email]);
    if (exists.rowCount) return fail(ctx, 409, 'This email already has an account: sign in, then open the link again');
    const { user } = await p.auth.api.signUpEmail({
      body: { name: input.name, email: inv.email, password: input.password },
    });
    await p.auth.api.addMember({
      body: { userId: user.id, organizationId: inv.organization_id, role: inv.role as 'member' | 'admin' },
    });
    await p.pool.query(`update people_invitations set status = 'accepted' where id = $1`, [ctx.params.id]);
    ctx.status = 201;
    ctx.body = { user: { id: user.id, email: user.email } };
  });

  // The OAuth consent page ({dashboard_url}/oauth/consent): a signed-in person approves an MCP client as
  // themselves (the `user` of the spec's approve body), for an app of their own workspaces. The demo workspace's
  // app is not offered: it is read-only, and an MCP connection would write through tools.
  async function consenting(ctx: Koa.Context, p: People) {
    const s = await session(ctx, p);
    if (!s) return void fail(ctx, 401, 'Sign in to continue');
    const workspaces = (await workspacesOf(p, s.user.id)).filter((w) => !w.demo);
    const ids = [...new Set(workspaces.flatMap((w) => w.app_ids))];
    const { rows } = await p.pool.query<{ id: string; name: string }>(`select id, name from apps where id = any($1)`, [
      ids,
    ]);
    return {
      session: s,
      apps: ids.filter((id) => rows.some((r) => r.id === id)).map((id) => rows.find((r) => r.id === id)!),
    };
  }
  /** Runs a service call, answering its AppError (404 for a used or expired request) as the API would. */
  async function answer(ctx: Koa.Context, fn: () => Promise<unknown>, status = 200) {
    try {
      ctx.body = await fn();
      ctx.status = status;
    } catch (err) {
      if (err instanceof AppError) return fail(ctx, err.status, err.message);
      throw err;
    }
  }

  api.get('/oauth/requests/:id', async (ctx) => {
    const p = await people(deps);
    const who = await consenting(ctx, p);
    if (!who) return;
    await answer(ctx, async () => {
      const request = await oauth.describeRequest(deps.orm.em.fork(), ctx.params.id);
      return {
        request,
        apps: who.apps,
        user: { id: who.session.user.id, name: who.session.user.name, email: who.session.user.email },
      };
    });
  });

  api.post('/oauth/requests/:id/approve', sameOrigin, json, async (ctx) => {
    const p = await people(deps);
    const who = await consenting(ctx, p);
    if (!who) return;
    const input = parse(ctx, consentBody);
    if (!input) return;
    const em = deps.orm.em.fork();
    await answer(ctx, async () => {
      const pending = await oauth.describeRequest(em, ctx.params.id);
      const appId = pending.app?.id ?? input.app_id;
      if (appId && !who.apps.some((a) => a.id === appId))
        throw new AppError(403, 'This app is not in your workspaces: ask its owner to invite you');
      const { user } = who.session;
      return oauth.approveRequest(
        em,
        ctx.params.id,
        {
          user: { id: user.id, name: user.name, email: user.email },
          access_level: input.access_level,
          app_id: input.app_id,
        },
        requestOrigin(ctx, deps),
      );
    });
  });

  api.post('/oauth/requests/:id/deny', sameOrigin, async (ctx) => {
    const p = await people(deps);
    if (!(await consenting(ctx, p))) return;
    await answer(ctx, () => oauth.denyRequest(deps.orm.em.fork(), ctx.params.id, requestOrigin(ctx, deps)));
  });

  // The demo workspace's webhook receiver (src/webhooks/demo-receiver.ts): no session, its path carries its token.
  api.post('/demo-receiver/:appId/:mode/:token', async (ctx) => {
    const body = await rawText(ctx, 1024 * 1024);
    if (body === null) return fail(ctx, 413, 'Body too large');
    const answer = await receiveDemoDelivery(deps.orm.em.fork(), deps.adminKey, {
      pathname: ctx.path,
      headers: ctx.req.headers,
      body,
    });
    ctx.status = answer.status;
    ctx.body = answer.body;
  });

  // The public API on the person's behalf.
  api.all('/apps/:appId/*rest', sameOrigin, proxy);
  api.all('/apps/:appId', sameOrigin, proxy);
  async function proxy(ctx: Koa.Context, next: Koa.Next) {
    const p = await people(deps);
    const s = await session(ctx, p);
    if (!s) return fail(ctx, 401, 'Unauthorized');
    const appId = ctx.params.appId;
    const workspaces = await workspacesOf(p, s.user.id);
    if (!workspaces.some((w) => w.app_ids.includes(appId))) return fail(ctx, 404, 'App not found');
    const { rows } = await p.pool.query<{ api_key: string }>(`select api_key from apps where id = $1`, [appId]);
    if (!rows[0]) return fail(ctx, 404, 'App not found');
    const target = ctx.path.slice(`${CONSOLE_PATH}/api`.length);
    // Admin-only app routes (MCP settings, connections, calls) for members; the read-only demo app reads them only.
    const member = workspaces.some((w) => !w.demo && w.app_ids.includes(appId));
    const useAdmin = ADMIN_APP_ROUTES.test(target) && (member || ctx.method === 'GET');
    ctx.req.headers.authorization = `Bearer ${useAdmin ? deps.adminKey : rows[0].api_key}`;
    delete ctx.req.headers.cookie;
    ctx.path = target;
    ctx.state.outsideApi = false;
    ctx.state.consoleUser = s.user.id;
    await next();
  }

  async function fetchSelf(ctx: Koa.Context, pathname: string, init: RequestInit) {
    // In-process call through the same app would need a second Koa; the loopback address of this server
    // is the request's own socket, never a Host header.
    const addr = ctx.req.socket.localAddress ?? '127.0.0.1';
    const host = addr.includes(':') ? `[${addr}]` : addr;
    const res = await fetch(`http://${host}:${ctx.req.socket.localPort}${pathname}`, {
      ...init,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${deps.adminKey}` },
    });
    return { status: res.status, body: (await res.json()) as unknown };
  }

  // Writes with a demo workspace app's secret key get 403 (the spec's Errors table). The demo app ids are
  // cached for a few seconds so ordinary writes cost no extra query.
  let demoApps: { ids: Set<string>; at: number } | undefined;
  async function demoWrite(ctx: Koa.Context): Promise<boolean> {
    if (SAFE_METHODS.has(ctx.method) || PREVIEWS.test(ctx.path)) return false;
    const m = /^\/apps\/([^/]+)(\/|$)/.exec(ctx.path);
    if (!m || !bearer(ctx)?.startsWith('key_')) return false;
    if (!demoApps || Date.now() - demoApps.at > 5000) {
      const { rows } = await (
        await people(deps)
      ).pool.query<{ app_ids: string[] }>(`select app_ids from orgs where id = $1`, [DEMO_WORKSPACE_ID]);
      demoApps = { ids: new Set(rows[0]?.app_ids ?? []), at: Date.now() };
    }
    if (!demoApps.ids.has(m[1])) return false;
    const action = DELIVERY_ACTIONS.exec(ctx.path);
    if (action && ctx.method === 'POST') {
      const { rows } = await (
        await people(deps)
      ).pool.query<{ url: string }>(`select url from webhook_endpoints where id = $1 and app_id = $2`, [
        action[2],
        action[1],
      ]);
      if (rows[0] && isDemoReceiverUrl(rows[0].url, action[1], deps.adminKey)) return false;
    }
    return true;
  }
  const guarded = async (ctx: Koa.Context, next: Koa.Next) => {
    if (await demoWrite(ctx))
      return fail(ctx, 403, 'This app is in the demo workspace: its data is read-only with the secret key');
    await next();
  };

  const apiRoutes = api.routes();
  const authHandler = (p: People) => toNodeHandler(p.auth);

  return async (ctx, next) => {
    const url = ctx.path;
    // Everything below but the proxied public API is the console's own: not in the OpenAPI document.
    ctx.state.outsideApi =
      url === AUTH_BASE_PATH ||
      url.startsWith(`${AUTH_BASE_PATH}/`) ||
      url === CONSOLE_PATH ||
      url.startsWith(`${CONSOLE_PATH}/`);
    if (url === AUTH_BASE_PATH || url.startsWith(`${AUTH_BASE_PATH}/`)) {
      // Keys never sign people in: an app key (or a wrong key) on these routes is 401, as the spec says.
      const key = bearer(ctx);
      if (key !== undefined && !safeEqual(key, deps.adminKey)) return fail(ctx, 401, 'Unauthorized');
      const p = await people(deps);
      ctx.respond = false;
      await authHandler(p)(ctx.req, ctx.res);
      return;
    }
    if (url.startsWith(`${CONSOLE_PATH}/api/`)) return apiRoutes(ctx as never, () => guarded(ctx, next));
    if (url === CONSOLE_PATH || url.startsWith(`${CONSOLE_PATH}/`)) {
      if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return fail(ctx, 405, 'Method not allowed');
      return serveStatic(ctx);
    }
    await guarded(ctx, next);
  };
}

/** The request body as text, or null past `limit` bytes. */
async function rawText(ctx: Koa.Context, limit: number): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function freeWorkspaceId(p: People, base: string): Promise<string> {
  for (let i = 0; ; i++) {
    const id = i === 0 ? base : `${base}_${i + 1}`;
    if (id === DEMO_WORKSPACE_ID) continue;
    const { rowCount } = await p.pool.query(`select 1 from orgs where id = $1`, [id]);
    if (!rowCount) return id;
  }
}

async function pendingInvitation(p: People, id: string) {
  const { rows } = await p.pool.query<{ email: string; role: string; organization_id: string; workspace: string }>(
    `select i.email, i.role, i."organizationId" as organization_id, w.name as workspace
       from people_invitations i join people_workspaces w on w.id = i."organizationId"
      where i.id = $1 and i.status = 'pending' and i."expiresAt" > now()`,
    [id],
  );
  return rows[0];
}

function serveStatic(ctx: Koa.Context) {
  const rel = (decodeComponent(ctx.path.slice(CONSOLE_PATH.length)) ?? '').replace(/^\/+/, '');
  const file = path.resolve(CONSOLE_DIST, rel);
  const inside = file.startsWith(CONSOLE_DIST + path.sep);
  if (inside && fs.existsSync(file) && fs.statSync(file).isFile()) {
    ctx.type = TYPES[path.extname(file)] ?? 'application/octet-stream';
    // Built assets carry a content hash in their names.
    ctx.set('Cache-Control', rel.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
    ctx.body = fs.createReadStream(file);
    return;
  }
  if (rel.startsWith('assets/')) return fail(ctx, 404, 'Not found');
  const index = path.join(CONSOLE_DIST, 'index.html');
  if (!fs.existsSync(index)) {
    ctx.status = 503;
    ctx.type = 'text/plain';
    ctx.body = 'The console is not built. Run `npm run build:console` (npm start does it for you).';
    return;
  }
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-cache');
  ctx.body = fs.createReadStream(index);
}
