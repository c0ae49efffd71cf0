// What the console's route files share: the path prefix, input schemas, the person of a request and their role.
import { z } from 'zod';
import type { Deps } from '../deps.js';
import { crossSite } from '../http/credentials.js';
import { AppError, badRequest, notFound, unauthorized } from '../errors.js';
import { roleAtLeast } from '../http/guard.js';
import { Reply, ROLES, type Role, type Scope } from '../http/route.js';
import { safeEqual } from '../http/secrets.js';
import { levelSchema } from '../mcp/settings.js';
import { guardrailsInput } from '../mcp/guardrails.js';
import { AUTH_BASE_PATH, passwordProblem, people, type People } from '../people/better-auth.js';
import { identityOf, roleInWorkspace } from '../people/workspaces.js';

export const tags = ['Console'];
export const API = '/console/api';

export const name = z.string().trim().min(1, 'must not be empty').max(200);
export const email = z.email().max(320);
/** Better Auth's own bound is 128 characters; the strength check (zxcvbn-ts) runs in the handlers. */
export const password = z.string().min(10, 'must be at least 10 characters').max(128);
export const setupBody = z.object({
  token: z.string().max(200).optional(),
  name,
  email,
  password,
  workspace: name.default('My workspace'),
});
export const appBody = z.object({ name });
export const inviteBody = z.object({ email, role: z.enum(['viewer', 'member', 'admin']).default('member') });
export const consentBody = z.object({
  access_level: levelSchema,
  app_id: z.string().min(1).max(255).optional(),
  guardrails: guardrailsInput.optional(),
});
/** An accept link's secret: sent to the invited address only (the link is `<console>/invite?token=...`). */
export const token = z.string().min(1).max(200);
/** A new person gives a name and password; a person signed in with the invited address gives nothing more. */
export const acceptBody = z.object({ token, name: name.optional(), password: password.optional() });
export const workspaceParams = z.object({ workspaceId: z.string().min(1).max(255) });
export const requestParams = z.object({ requestId: z.string().min(1).max(255) });
export const appParams = z.object({ appId: z.string().min(1).max(255) });

export const userSchema = z.object({ id: z.string(), name: z.string(), email: z.string() });
export const roleSchema = z.enum(ROLES);
export const meSchema = z.object({
  user: userSchema.nullable(),
  setup_needed: z.boolean().optional(),
  workspaces: z
    .array(
      z.object({
        id: z.string(),
        name: z.string(),
        role: roleSchema,
        demo: z.boolean(),
        apps: z.array(z.object({ id: z.string(), name: z.string() })),
      }),
    )
    .optional(),
  temporal_ui_url: z.string().nullable().optional(),
  /** The Temporal namespace the service's workflows run in (`TEMPORAL_NAMESPACE`), for links into the UI. */
  temporal_namespace: z.string().optional(),
});
/**
 * An invitation as its sender sees it: never its accept link, which goes by email to the invited address only
 * (docs/security.md, "Invitations"); whether the email went, and what to do when it did not, in `message`.
 */
export const invitationSchema = z.object({
  id: z.string(),
  email: z.string(),
  role: roleSchema,
  expires_at: z.string(),
  email_sent: z.boolean(),
  message: z.string(),
});
export const memberParams = workspaceParams.extend({ userId: z.string().min(1).max(255) });
export const workspaceInvitationParams = workspaceParams.extend({ invitationId: z.string().min(1).max(255) });
export const memberSchema = z.object({
  user_id: z.string(),
  name: z.string(),
  email: z.string(),
  role: roleSchema,
  joined_at: z.string(),
});
export const pendingInvitationSchema = z.object({
  id: z.string(),
  email: z.string(),
  role: roleSchema,
  invited_by: z.string().nullable().describe('The email of the person who sent it'),
  created_at: z.string(),
  expires_at: z.string(),
});
export const memberRoleBody = z.object({ role: roleSchema });

export const slugify = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_|_$/g, '')
    .slice(0, 40) || 'workspace';

/** A state change that carries a person's cookie must come from the console's own pages. */
export function sameSite(s: Pick<Scope<unknown, unknown, unknown>, 'headers' | 'origin' | 'deps'>, method = 'POST') {
  const refused = crossSite(method, s.headers, s.origin, s.deps.config.APP_URL);
  if (refused) throw new AppError(403, refused);
}

export function personOf(s: Scope<unknown, unknown, unknown>) {
  if (s.caller.kind !== 'person') throw unauthorized();
  return s.caller;
}

/** The person's role in a workspace: 404 when they are not in it, 403 below `least`. */
export async function requireWorkspaceRole(p: People, userId: string, workspaceId: string, least: Role) {
  const role = await roleInWorkspace(p, userId, workspaceId);
  if (!role) throw notFound('Workspace');
  if (!roleAtLeast(role, least) || workspaceId === 'demo')
    throw new AppError(403, `Only ${least === 'owner' ? 'owners' : 'owners and admins'} of this workspace can do that`);
  return role;
}

export async function passwordOk(p: string, personal: string[]) {
  const problem = passwordProblem(p, personal);
  if (problem) throw badRequest(problem);
}

/** The people module of these deps (Better Auth and its pool). */
export const peopleOf = (deps: Deps) => people(deps);

/** The person of a request's session cookie, or null. */
export const sessionPerson = (deps: Deps, headers: Record<string, string | undefined>) =>
  identityOf(() => peopleOf(deps)).person(headers);

/**
 * One of Better Auth's HTTP routes, answered by Better Auth itself: the request is rebuilt with the client address
 * Koa read (forwarded headers count only under TRUST_PROXY) and its answer (cookies included) passed back. App keys
 * are not credentials here (401), as the spec says of `/api/auth/*`.
 */
export async function betterAuth(
  s: Scope<unknown, unknown, unknown>,
  method: 'GET' | 'POST',
  path: string,
): Promise<Reply<Record<string, unknown>>> {
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(s.headers.authorization ?? '')?.[1];
  if (bearer !== undefined && !safeEqual(bearer, s.deps.adminKey)) throw unauthorized();
  const p = await peopleOf(s.deps);
  const headers = new Headers();
  for (const name of ['cookie', 'origin', 'referer', 'user-agent', 'sec-fetch-site', 'sec-fetch-mode'])
    if (s.headers[name]) headers.set(name, s.headers[name]!);
  // The body was parsed as JSON by the route (or there was none): Better Auth gets it as JSON.
  if (method === 'POST') headers.set('content-type', 'application/json');
  if (s.ip) headers.set('x-forwarded-for', s.ip);
  const res = await p.auth.handler(
    new Request(`${s.origin}${AUTH_BASE_PATH}${path}`, {
      method,
      headers,
      body: method === 'POST' ? s.rawBody || '{}' : undefined,
    }),
  );
  const text = await res.text();
  const out: Record<string, string | string[]> = { 'Cache-Control': 'no-store' };
  const cookies = res.headers.getSetCookie();
  if (cookies.length) out['Set-Cookie'] = cookies;
  let body: Record<string, unknown>;
  try {
    body = text ? ((JSON.parse(text) as Record<string, unknown> | null) ?? {}) : {};
  } catch {
    body = { error: text.slice(0, 200) };
  }
  if (res.status >= 400) {
    const message = typeof body.message === 'string' ? body.message : 'Sign-in refused';
    return new Reply(
      res.status,
      { error: message, ...(typeof body.code === 'string' ? { code: body.code } : {}) },
      out,
    );
  }
  return new Reply(res.status, body, out);
}

export const authAnswer = z.looseObject({});
export const authError = z.object({ error: z.string(), code: z.string().optional() });
