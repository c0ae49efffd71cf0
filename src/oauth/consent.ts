import { createHmac } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { sql } from '../db/sql.js';
import { safeEqual } from '../http/secrets.js';
import { LEVELS } from '../mcp/settings.js';
import type { Level } from '../mcp/mcp.entities.js';
import type { describeRequest } from './oauth.service.js';
import { errorPage, esc, page } from '../http/html.js';

export { errorPage };

/**
 * The service's own consent page (used when APP_URL is not set). The operator signs in with the admin
 * key, once per 12 hours: the key is checked and never stored; the browser gets a session cookie
 * `<expiry>.<HMAC(admin key, expiry)>` (HttpOnly, SameSite=Strict, Path=/oauth, Secure on https), so
 * changing the admin key signs everyone out. Every form carries a CSRF token bound to the session and
 * the request, and POSTs with a foreign Origin are refused.
 */
export const SESSION_COOKIE = 'offerkit_consent';
const SESSION_SECONDS = 12 * 3600;

const hmac = (key: string, value: string) => createHmac('sha256', key).update(value).digest('base64url');

export function newSession(adminKey: string, now = Date.now()): string {
  const exp = Math.floor(now / 1000) + SESSION_SECONDS;
  return `${exp}.${hmac(adminKey, `consent-session:${exp}`)}`;
}

export function sessionCookie(value: string, secure: boolean, maxAge = SESSION_SECONDS): string {
  return `${SESSION_COOKIE}=${value}; Path=/oauth; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${secure ? '; Secure' : ''}`;
}

export function readSession(cookieHeader: string | undefined, adminKey: string): string | null {
  const m = new RegExp(`(?:^|;\\s*)${SESSION_COOKIE}=([^;]+)`).exec(cookieHeader ?? '');
  if (!m) return null;
  const [exp, mac] = m[1].split('.');
  if (!exp || !mac || !/^\d+$/.test(exp) || Number(exp) * 1000 < Date.now()) return null;
  return safeEqual(mac, hmac(adminKey, `consent-session:${exp}`)) ? m[1] : null;
}

export const csrfToken = (adminKey: string, session: string, requestId: string) =>
  hmac(adminKey, `consent-csrf:${session}:${requestId}`);

const LEVEL_TEXT: Record<Level, [string, string]> = {
  read: ['Read only', 'Look up the catalog, accounts, usage, analytics, webhooks and events.'],
  write: [
    'Read and write',
    'Also create and update records, record usage, rename the app, send test events and retry deliveries. No deletes.',
  ],
  full: ['Full access', 'Everything, including deletes, detaching entitlements and add-ons, and removing incentives.'],
};

export function signInPage(requestId: string, error?: string): string {
  return page(
    'Sign in',
    `<h1>Sign in to approve an MCP client</h1>
<p>An MCP client asks to use an offerkit MCP server. Sign in with the service's admin key to review the request.</p>
${error ? `<p class="error" role="alert">${esc(error)}</p>` : ''}
<form method="post" action="/oauth/consent/sign-in">
  <input type="hidden" name="request" value="${esc(requestId)}">
  <label for="admin_key">Admin key</label>
  <input type="password" id="admin_key" name="admin_key" autocomplete="current-password" required>
  <p><button type="submit" class="primary">Sign in</button></p>
</form>`,
  );
}

export interface WorkspaceApps {
  name: string;
  apps: { id: string; name: string }[];
}

/**
 * The apps the operator may pick: the admin key holder's workspaces are every org; apps in no org are
 * listed last, since the admin key owns every app.
 */
export async function workspacesOfAdmin(em: EntityManager): Promise<WorkspaceApps[]> {
  const orgs = await sql<{ id: string; name: string | null; app_ids: string[] }>(
    em,
    'select id, name, app_ids from orgs order by created_at, id',
  );
  const apps = await sql<{ id: string; name: string }>(em, 'select id, name from apps order by created_at, id');
  const byId = new Map(apps.map((a) => [a.id, a]));
  const inOrg = new Set<string>();
  const groups: WorkspaceApps[] = [];
  for (const o of orgs) {
    const list = o.app_ids.map((id) => byId.get(id)).filter((a): a is { id: string; name: string } => a !== undefined);
    list.forEach((a) => inOrg.add(a.id));
    if (list.length) groups.push({ name: o.name ?? o.id, apps: list });
  }
  const rest = apps.filter((a) => !inOrg.has(a.id));
  if (rest.length) groups.push({ name: 'Not in a workspace', apps: rest });
  return groups;
}

export function consentPage(
  r: Awaited<ReturnType<typeof describeRequest>>,
  csrf: string,
  workspaces: WorkspaceApps[] | null,
  error?: string,
): string {
  const clientName = r.client.name ?? r.client.id;
  const preselected: Level = r.requested_level ?? 'read';
  // Never more than the app's MCP server gives OAuth connections (its cap), once the app is known.
  const offered = r.max_level ? LEVELS.slice(0, LEVELS.indexOf(r.max_level) + 1) : LEVELS;
  const levels = offered
    .map(
      (l) =>
        `<label><input type="radio" name="access_level" value="${l}"${l === preselected ? ' checked' : ''} ` +
        `aria-describedby="hint-${l}"> ${LEVEL_TEXT[l][0]}</label>` +
        `<span class="hint" id="hint-${l}">${esc(LEVEL_TEXT[l][1])}</span>`,
    )
    .join('\n    ');
  const options = (workspaces ?? [])
    .map(
      (w) =>
        `<optgroup label="${esc(w.name)}">` +
        w.apps.map((a) => `<option value="${esc(a.id)}">${esc(a.name)} (${esc(a.id)})</option>`).join('') +
        '</optgroup>',
    )
    .join('\n    ');
  const appPart = r.app
    ? `<p>MCP server: <strong>${esc(r.app.name)}</strong> (<code>${esc(r.app.id)}</code>)</p>`
    : `<label for="app_id">App</label>
  <select id="app_id" name="app_id" required>
    ${options}
  </select>`;
  const returnTo = new URL(r.redirect_uri).origin === 'null' ? r.redirect_uri : new URL(r.redirect_uri).origin;
  const signOut =
    '<form method="post" action="/oauth/consent/sign-out">' +
    `<input type="hidden" name="request" value="${esc(r.id)}"><button type="submit">Sign out</button></form>`;
  return page(
    'Approve MCP client',
    `<h1>Allow <span id="client-name">${esc(clientName)}</span> to use offerkit?</h1>
${error ? `<p class="error" role="alert">${esc(error)}</p>` : ''}
<p>After you decide, your browser goes back to <code>${esc(returnTo)}</code>.</p>
<form method="post" action="/oauth/consent">
  <input type="hidden" name="request" value="${esc(r.id)}">
  <input type="hidden" name="csrf" value="${esc(csrf)}">
  ${appPart}
  <fieldset>
    <legend>Access level</legend>
    ${levels}
  </fieldset>
  <p>
    <button type="submit" name="decision" value="approve" class="primary">Approve</button>
    <button type="submit" name="decision" value="deny" formnovalidate>Deny</button>
  </p>
</form>
${signOut}`,
  );
}
