// The console's own actions, as routes of the one table: the same body parsing and limits (413), error shape
// (400 naming the field), contract tests and OpenAPI entries (tag "Console") as the API. Every `/apps/:appId`
// route is also served to people at `/console/api/apps/:appId/...` with their session (src/http/router.ts): the
// console calls the API's own handlers, as the signed-in person, with their role; the browser never holds a key.
//
// Credentials here: C a person's session cookie (state changes must come from the console's own origin), or N
// (setup, invitations, the demo receiver, people's sign-in through Better Auth's three routes the console uses).
import { z } from 'zod';
import { presentApp } from '../apps/apps.present.js';
import * as apps from '../apps/apps.service.js';
import type { Deps } from '../deps.js';
import { crossSite } from '../http/credentials.js';
import { AppError, badRequest, conflict, notFound, unauthorized } from '../errors.js';
import { audit } from '../http/audit.js';
import { requiredRole, roleAtLeast, writes } from '../http/guard.js';
import { ctxOf, Reply, ROLES, route, type Role, type RouteDef, type Scope } from '../http/route.js';
import { servedToPeople } from '../http/router.js';
import * as webhookEndpoints from '../webhooks/endpoints.service.js';
import { endpointParams } from '../webhooks/webhooks.schemas.js';
import { safeEqual } from '../http/secrets.js';
import { getSettings, levelSchema } from '../mcp/settings.js';
import { guardrailsInput } from '../mcp/guardrails.js';
import { appCap, lower, toolsOf } from '../mcp/tools.js';
import * as oauth from '../oauth/oauth.service.js';
import {
  AUTH_BASE_PATH,
  clearSetupTokens,
  consumeSetupToken,
  countOwners,
  passwordProblem,
  people,
  type People,
} from '../people/better-auth.js';
import {
  acceptInvitation,
  addAppToWorkspace,
  createWorkspace,
  freeWorkspaceId,
  identityOf,
  changeMember,
  invitationsOf,
  invite,
  membersOf,
  pendingInvitation,
  renewInvitationToken,
  revokeInvitation,
  personExists,
  roleInWorkspace,
  workspacesOf,
} from '../people/workspaces.js';
import { sendInvitation } from '../people/invitation-mail.js';
import { dashboardUrl, DEMO_RECEIVER_PATH } from './urls.js';
import { temporalUiUrl } from '../temporal/ui.js';

const tags = ['Console'];
const API = '/console/api';

const name = z.string().trim().min(1, 'must not be empty').max(200);
const email = z.email().max(320);
/** Better Auth's own bound is 128 characters; the strength check (zxcvbn-ts) runs in the handlers. */
const password = z.string().min(10, 'must be at least 10 characters').max(128);
const setupBody = z.object({
  token: z.string().max(200).optional(),
  name,
  email,
  password,
  workspace: name.default('My workspace'),
});
const appBody = z.object({ name });
const inviteBody = z.object({ email, role: z.enum(['viewer', 'member', 'admin']).default('member') });
const consentBody = z.object({
  access_level: levelSchema,
  app_id: z.string().min(1).max(255).optional(),
  guardrails: guardrailsInput.optional(),
});
/** An accept link's secret: sent to the invited address only (the link is `<console>/invite?token=...`). */
const token = z.string().min(1).max(200);
/** A new person gives a name and password; a person signed in with the invited address gives nothing more. */
const acceptBody = z.object({ token, name: name.optional(), password: password.optional() });
const workspaceParams = z.object({ workspaceId: z.string().min(1).max(255) });
const requestParams = z.object({ requestId: z.string().min(1).max(255) });
const appParams = z.object({ appId: z.string().min(1).max(255) });

const userSchema = z.object({ id: z.string(), name: z.string(), email: z.string() });
const roleSchema = z.enum(ROLES);
const meSchema = z.object({
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
const invitationSchema = z.object({
  id: z.string(),
  email: z.string(),
  role: roleSchema,
  expires_at: z.string(),
  email_sent: z.boolean(),
  message: z.string(),
});
const memberParams = workspaceParams.extend({ userId: z.string().min(1).max(255) });
const workspaceInvitationParams = workspaceParams.extend({ invitationId: z.string().min(1).max(255) });
const memberSchema = z.object({
  user_id: z.string(),
  name: z.string(),
  email: z.string(),
  role: roleSchema,
  joined_at: z.string(),
});
const pendingInvitationSchema = z.object({
  id: z.string(),
  email: z.string(),
  role: roleSchema,
  invited_by: z.string().nullable().describe('The email of the person who sent it'),
  created_at: z.string(),
  expires_at: z.string(),
});
const memberRoleBody = z.object({ role: roleSchema });

const slugify = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_|_$/g, '')
    .slice(0, 40) || 'workspace';

/** A state change that carries a person's cookie must come from the console's own pages. */
function sameSite(s: Pick<Scope<unknown, unknown, unknown>, 'headers' | 'origin' | 'deps'>, method = 'POST') {
  const refused = crossSite(method, s.headers, s.origin, s.deps.config.APP_URL);
  if (refused) throw new AppError(403, refused);
}

function personOf(s: Scope<unknown, unknown, unknown>) {
  if (s.caller.kind !== 'person') throw unauthorized();
  return s.caller;
}

/** The person's role in a workspace: 404 when they are not in it, 403 below `least`. */
async function requireWorkspaceRole(p: People, userId: string, workspaceId: string, least: Role) {
  const role = await roleInWorkspace(p, userId, workspaceId);
  if (!role) throw notFound('Workspace');
  if (!roleAtLeast(role, least) || workspaceId === 'demo')
    throw new AppError(403, `Only ${least === 'owner' ? 'owners' : 'owners and admins'} of this workspace can do that`);
  return role;
}

async function passwordOk(p: string, personal: string[]) {
  const problem = passwordProblem(p, personal);
  if (problem) throw badRequest(problem);
}

/** The people module of these deps (Better Auth and its pool). */
const peopleOf = (deps: Deps) => people(deps);

/** The person of a request's session cookie, or null. */
const sessionPerson = (deps: Deps, headers: Record<string, string | undefined>) =>
  identityOf(() => peopleOf(deps)).person(headers);

/**
 * One of Better Auth's HTTP routes, answered by Better Auth itself: the request is rebuilt with the client address
 * Koa read (forwarded headers count only under TRUST_PROXY) and its answer (cookies included) passed back. App keys
 * are not credentials here (401), as the spec says of `/api/auth/*`.
 */
async function betterAuth(
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

const authAnswer = z.looseObject({});
const authError = z.object({ error: z.string(), code: z.string().optional() });

export const consoleRoutes = [
  route({
    method: 'GET',
    path: `${API}/status`,
    sdk: 'console.status',
    auth: ['N'],
    tags,
    summary: 'Whether the first owner still has to be set up',
    response: z.object({ setup_needed: z.boolean() }),
    handler: async ({ deps }) => ({ setup_needed: (await countOwners(await peopleOf(deps))) === 0 }),
  }),
  route({
    method: 'POST',
    path: `${API}/setup`,
    sdk: 'console.setup',
    auth: ['N'],
    tags,
    summary: 'Set up the first owner, with the one-time setup link or the admin key',
    description:
      "Creates the first owner and their workspace. Takes the setup link's `token` (sent from the console's own " +
      'origin) or the admin key. 409 once an owner exists.',
    body: setupBody,
    status: 201,
    errors: [403, 409],
    response: z.object({ user: userSchema, workspace: z.object({ id: z.string(), name: z.string() }) }),
    handler: async (s) => {
      const p = await peopleOf(s.deps);
      const byAdmin = s.caller.kind === 'admin';
      if (!byAdmin) sameSite(s);
      if ((await countOwners(p)) > 0) throw conflict('The owner is already set up. Sign in instead.');
      // Input problems first: a mistyped password must not use up the one-time link.
      await passwordOk(s.body.password, [s.body.name, s.body.email]);
      if (await personExists(p, s.body.email)) throw conflict('A person with this email exists: sign in instead');
      if (!byAdmin && (!s.body.token || !(await consumeSetupToken(p, s.body.token))))
        throw new AppError(401, 'This setup link is not valid any more. Restart the service for a new one.');
      const { user } = await p.auth.api.signUpEmail({
        body: { name: s.body.name, email: s.body.email, password: s.body.password },
      });
      const id = await freeWorkspaceId(p, slugify(s.body.workspace));
      await createWorkspace(p, { id, name: s.body.workspace, ownerId: user.id });
      await clearSetupTokens(p);
      return { user: { id: user.id, name: user.name, email: user.email }, workspace: { id, name: s.body.workspace } };
    },
  }),
  route({
    method: 'GET',
    path: `${API}/me`,
    sdk: 'console.me',
    auth: ['N'],
    tags,
    summary: 'The signed-in person, their workspaces (with their role) and apps; `user: null` when signed out',
    response: meSchema,
    handler: async ({ deps, headers }) => {
      const p = await peopleOf(deps);
      const person = await sessionPerson(deps, headers);
      if (!person) return { user: null, setup_needed: (await countOwners(p)) === 0 };
      const workspaces = await workspacesOf(p, person.userId);
      const ids = [...new Set(workspaces.flatMap((w) => w.app_ids))];
      const { rows } = await p.pool.query<{ id: string; name: string }>(
        `select id, name from apps where id = any($1)`,
        [ids],
      );
      const names = new Map(rows.map((r) => [r.id, r.name]));
      return {
        user: { id: person.userId, name: person.name, email: person.email },
        workspaces: workspaces.map((w) => ({
          id: w.id,
          name: w.name,
          role: w.role,
          demo: w.demo,
          apps: w.app_ids.filter((id) => names.has(id)).map((id) => ({ id, name: names.get(id)! })),
        })),
        temporal_ui_url: temporalUiUrl(deps.config),
        temporal_namespace: deps.config.TEMPORAL_NAMESPACE,
      };
    },
  }),
  route({
    method: 'POST',
    path: `${API}/workspaces/:workspaceId/apps`,
    sdk: 'console.createApp',
    // Checked by the handler in the workspace of the path (no app here): declared for the console's buttons.
    role: 'admin',
    auth: ['C'],
    tags,
    summary: 'Create an app in a workspace (owners and admins)',
    params: workspaceParams,
    body: appBody,
    status: 201,
    errors: [403],
    secretFields: ['api_key'],
    response: z.object({ id: z.string(), name: z.string(), api_key: z.string(), public_key: z.string() }),
    handler: async (s) => {
      const person = personOf(s);
      const p = await peopleOf(s.deps);
      await requireWorkspaceRole(p, person.userId, s.params.workspaceId, 'admin');
      const app = await apps.createApp(s.em, { name: s.body.name });
      await addAppToWorkspace(p, s.params.workspaceId, app.id);
      s.deps.logger.info({ audit: 'app_created', appId: app.id, userId: person.userId }, 'console: app created');
      const { id, name: appName, api_key, public_key } = presentApp(app);
      return { id, name: appName, api_key, public_key };
    },
  }),
  route({
    method: 'POST',
    path: `${API}/apps/:appId/secret-key/reveal`,
    sdk: 'console.revealSecretKey',
    auth: ['C'],
    tags,
    summary: "Reveal the app's secret key (owners and admins; logged)",
    description:
      'The only way the console shows a secret key: never in a list or a page load. Each reveal is logged with the ' +
      'person who asked.',
    params: appParams,
    role: 'admin',
    writes: false,
    errors: [403],
    response: z.object({ api_key: z.string() }),
    handler: (s) => {
      personOf(s);
      audit(s, 'secret_key_revealed');
      return { api_key: s.app!.apiKey };
    },
  }),
  route({
    method: 'POST',
    path: `${API}/apps/:appId/webhooks/:webhookId/secret/reveal`,
    sdk: 'console.revealWebhookSecret',
    auth: ['C'],
    tags,
    summary: "Reveal a webhook endpoint's signing secret (members and above; logged)",
    description:
      'The only way the console shows a signing secret: the endpoint reads answer it as `[redacted]` to people. ' +
      'Each reveal is logged with the person who asked. Viewers get 403: with the secret anyone can sign events ' +
      "the app's receiver trusts.",
    params: endpointParams,
    role: 'member',
    writes: false,
    errors: [403],
    response: z.object({ secret: z.string() }),
    handler: async (s) => {
      personOf(s);
      const { secret } = await webhookEndpoints.getEndpoint(ctxOf(s), s.params.webhookId);
      audit(s, 'webhook_secret_revealed', { webhookId: s.params.webhookId });
      return { secret };
    },
  }),
  route({
    method: 'GET',
    path: `${API}/roles`,
    sdk: 'console.roles',
    auth: ['N'],
    tags,
    summary: 'The least role each console action needs, from the route table',
    description:
      'For every route a person may call through the console (by its SDK name): the least workspace role it ' +
      'takes, whether it changes anything, and whether the read-only demo allows it anyway. The console shows an ' +
      'action only to the roles this names; the server decides on the same table.',
    response: z.object({
      routes: z.record(z.string(), z.object({ role: roleSchema, writes: z.boolean(), read_only_exempt: z.boolean() })),
    }),
    handler: ({ routes }) => ({ routes: consoleRoles(routes) }),
  }),
  route({
    method: 'POST',
    path: `${API}/workspaces/:workspaceId/invitations`,
    sdk: 'console.invite',
    // Checked by the handler in the workspace of the path (no app here): declared for the console's buttons.
    role: 'admin',
    auth: ['C'],
    tags,
    summary: 'Invite an address to a workspace (owners and admins): the link goes to that address by email',
    description:
      'The accept link is emailed to the invited address (SMTP_URL) and is never in this answer: whoever accepts ' +
      'has shown they read that mail. `email_sent` and `message` say whether the email went. 409 when the address ' +
      'already belongs to the workspace or has a pending invitation.',
    params: workspaceParams,
    body: inviteBody,
    status: 201,
    errors: [403, 409],
    response: invitationSchema,
    handler: async (s) => {
      const person = personOf(s);
      const p = await peopleOf(s.deps);
      await requireWorkspaceRole(p, person.userId, s.params.workspaceId, 'admin');
      const inv = await invite(p, {
        workspaceId: s.params.workspaceId,
        email: s.body.email,
        role: s.body.role,
        invitedBy: person.userId,
      });
      return mailInvitation(s, p, inv, person.name);
    },
  }),
  route({
    method: 'POST',
    path: `${API}/workspaces/:workspaceId/invitations/:invitationId/resend`,
    sdk: 'console.resendInvitation',
    // Checked by the handler in the workspace of the path (no app here): declared for the console's buttons.
    role: 'admin',
    auth: ['C'],
    tags,
    summary: 'Send a pending invitation again (owners and admins): a new link by email, the older one stops',
    params: workspaceInvitationParams,
    errors: [403],
    response: invitationSchema,
    handler: async (s) => {
      const person = personOf(s);
      const p = await peopleOf(s.deps);
      await requireWorkspaceRole(p, person.userId, s.params.workspaceId, 'admin');
      const inv = await renewInvitationToken(p, s.params.workspaceId, { id: s.params.invitationId });
      return mailInvitation(s, p, inv, person.name);
    },
  }),
  route({
    method: 'POST',
    path: `${API}/workspaces/:workspaceId/invitations/link`,
    sdk: 'console.invitationLink',
    auth: ['A'],
    tags,
    summary: "A pending invitation's accept link, for the operator (admin key only): a new link, the older one stops",
    description:
      'For a deployment that sends no email (no SMTP_URL): the operator runs this from their own terminal with the ' +
      'admin key and hands the link to the invited person themselves. Never served to a person in the console. ' +
      'Logged with the address.',
    params: workspaceParams,
    body: z.object({ email }),
    errors: [404],
    response: z.object({
      id: z.string(),
      email: z.string(),
      role: roleSchema,
      expires_at: z.string(),
      url: z.string(),
    }),
    handler: async (s) => {
      const p = await peopleOf(s.deps);
      const inv = await renewInvitationToken(p, s.params.workspaceId, { email: s.body.email });
      audit(s, 'invitation_link_issued', { workspaceId: s.params.workspaceId, invitationId: inv.id, to: inv.email });
      return {
        id: inv.id,
        email: inv.email,
        role: inv.role,
        expires_at: inv.expires_at,
        url: acceptLink(s, inv.token),
      };
    },
  }),
  route({
    method: 'GET',
    path: `${API}/workspaces/:workspaceId/members`,
    sdk: 'console.members',
    // Checked by the handler in the workspace of the path (no app here): declared for the console's buttons.
    role: 'admin',
    auth: ['C'],
    tags,
    summary: "A workspace's people with their roles (owners and admins)",
    params: workspaceParams,
    errors: [403],
    response: z.array(memberSchema),
    handler: async (s) => {
      const p = await peopleOf(s.deps);
      await requireWorkspaceRole(p, personOf(s).userId, s.params.workspaceId, 'admin');
      return membersOf(p, s.params.workspaceId);
    },
  }),
  route({
    method: 'PATCH',
    path: `${API}/workspaces/:workspaceId/members/:userId`,
    sdk: 'console.updateMember',
    // Checked by the handler in the workspace of the path (no app here): declared for the console's buttons.
    role: 'admin',
    auth: ['C'],
    tags,
    summary: "Change a member's role (owners and admins)",
    description:
      'Admins set viewer, member or admin; only owners make, change or remove an owner. 409 when it would leave ' +
      'the workspace without an owner.',
    params: memberParams,
    body: memberRoleBody,
    errors: [403, 409],
    response: memberSchema,
    handler: async (s) => {
      const person = personOf(s);
      const p = await peopleOf(s.deps);
      await requireWorkspaceRole(p, person.userId, s.params.workspaceId, 'admin');
      const member = await changeMember(p, { ...s.params, role: s.body.role, actorId: person.userId });
      // A lowered role can end the person's MCP connections (a token's check is kept in every API process).
      await s.deps.credentials.announce('*');
      s.deps.logger.info(
        {
          audit: 'member_role_changed',
          workspaceId: s.params.workspaceId,
          memberId: s.params.userId,
          role: s.body.role,
          userId: person.userId,
        },
        'console: member role changed',
      );
      return member!;
    },
  }),
  route({
    method: 'DELETE',
    path: `${API}/workspaces/:workspaceId/members/:userId`,
    sdk: 'console.removeMember',
    // Checked by the handler in the workspace of the path (no app here): declared for the console's buttons.
    role: 'admin',
    auth: ['C'],
    tags,
    summary: 'Remove a person from a workspace (owners and admins)',
    description:
      'They lose access to every app of the workspace at once; their sign-in stays for other workspaces. A person ' +
      'made through an invitation who is in no other workspace is deleted (sessions and password too), so the ' +
      'address can be invited afresh. Only owners remove an owner; 409 for the last owner.',
    params: memberParams,
    errors: [403, 409],
    response: z.object({ removed: z.literal(true), user_id: z.string() }),
    handler: async (s) => {
      const person = personOf(s);
      const p = await peopleOf(s.deps);
      await requireWorkspaceRole(p, person.userId, s.params.workspaceId, 'admin');
      await changeMember(p, { ...s.params, role: null, actorId: person.userId });
      // Their MCP connections on the workspace's apps end at once in every API process.
      await s.deps.credentials.announce('*');
      s.deps.logger.info(
        {
          audit: 'member_removed',
          workspaceId: s.params.workspaceId,
          memberId: s.params.userId,
          userId: person.userId,
        },
        'console: member removed',
      );
      return { removed: true as const, user_id: s.params.userId };
    },
  }),
  route({
    method: 'GET',
    path: `${API}/workspaces/:workspaceId/invitations`,
    sdk: 'console.invitations',
    // Checked by the handler in the workspace of the path (no app here): declared for the console's buttons.
    role: 'admin',
    auth: ['C'],
    tags,
    summary: "A workspace's pending invitations (owners and admins)",
    params: workspaceParams,
    errors: [403],
    response: z.array(pendingInvitationSchema),
    handler: async (s) => {
      const p = await peopleOf(s.deps);
      await requireWorkspaceRole(p, personOf(s).userId, s.params.workspaceId, 'admin');
      return invitationsOf(p, s.params.workspaceId);
    },
  }),
  route({
    method: 'DELETE',
    path: `${API}/workspaces/:workspaceId/invitations/:invitationId`,
    sdk: 'console.revokeInvitation',
    // Checked by the handler in the workspace of the path (no app here): declared for the console's buttons.
    role: 'admin',
    auth: ['C'],
    tags,
    summary: 'Revoke a pending invitation (owners and admins): its link stops working',
    params: workspaceInvitationParams,
    errors: [403],
    response: pendingInvitationSchema,
    handler: async (s) => {
      const p = await peopleOf(s.deps);
      await requireWorkspaceRole(p, personOf(s).userId, s.params.workspaceId, 'admin');
      return revokeInvitation(p, s.params.workspaceId, s.params.invitationId);
    },
  }),
  route({
    method: 'POST',
    path: `${API}/invitations/lookup`,
    sdk: 'console.invitation',
    auth: ['N'],
    tags,
    summary: "A pending invitation, by its accept link's secret: the invited address and the workspace",
    description:
      'The secret travels in the body (the link carries it in its query string, which request logs leave out). 404 ' +
      'when the link is not valid any more (accepted, revoked, sent again since, expired, or its sender may no ' +
      'longer invite).',
    body: z.object({ token }),
    writes: false,
    idempotency: false,
    response: z.object({ email: z.string(), workspace: z.string() }),
    handler: async ({ deps, body }) => {
      const inv = await pendingInvitation(await peopleOf(deps), body.token);
      if (!inv) throw new AppError(404, 'This invitation is not valid any more');
      return { email: inv.email, workspace: inv.workspace };
    },
  }),
  route({
    method: 'POST',
    path: `${API}/invitations/accept`,
    sdk: 'console.acceptInvitation',
    auth: ['N'],
    tags,
    summary: "Accept an invitation with its accept link's secret: creates the person with the invited address",
    description:
      'The secret was emailed to the invited address only, so whoever accepts reads its mail. The person is created ' +
      'with that address, never another; someone who already has an account with it joins signed in as themselves. ' +
      'Of concurrent accepts one answers 201 and the others 409.',
    body: acceptBody,
    status: 201,
    errors: [403, 409],
    response: z.object({ user: z.object({ id: z.string(), email: z.string() }) }),
    handler: async (s) => {
      sameSite(s);
      const p = await peopleOf(s.deps);
      const inv = await pendingInvitation(p, s.body.token);
      if (!inv) throw new AppError(404, 'This invitation is not valid any more');
      // Someone who already has an account joins as themselves, signed in with the invited address.
      const signedIn = await sessionPerson(s.deps, s.headers);
      if (signedIn && signedIn.email.toLowerCase() === inv.email.toLowerCase())
        return {
          user: await acceptInvitation(
            p,
            s.body.token,
            async () => ({ id: signedIn.userId, email: signedIn.email }),
            false,
          ),
        };
      if (await personExists(p, inv.email))
        throw conflict(`${inv.email} already has an account: sign in as ${inv.email}, then open the link again`);
      if (!s.body.name) throw badRequest('name: is required');
      if (!s.body.password) throw badRequest('password: is required');
      const { name: newName, password: newPassword } = s.body;
      await passwordOk(newPassword, [newName, inv.email]);
      const user = await acceptInvitation(
        p,
        s.body.token,
        async (address) => {
          const made = await p.auth.api
            .signUpEmail({ body: { name: newName, email: address, password: newPassword } })
            .catch((err: unknown) => {
              throw conflict(`Could not create the person: ${(err as Error).message}`);
            });
          return { id: made.user.id, email: made.user.email };
        },
        true,
      );
      return { user };
    },
  }),
  route({
    method: 'GET',
    path: `${API}/mcp-tools`,
    sdk: 'console.mcpTools',
    auth: ['C'],
    tags,
    summary: "The MCP tools an app's server offers (from the route table), for the MCP page's switches",
    response: z.array(
      z.object({ name: z.string(), level: z.string(), method: z.string(), path: z.string(), summary: z.string() }),
    ),
    handler: ({ routes }) =>
      routes
        .filter((r) => r.mcp)
        .map((r) => ({ name: r.mcp!.tool, level: r.mcp!.level, method: r.method, path: r.path, summary: r.summary })),
  }),
  route({
    method: 'GET',
    path: `${API}/oauth/requests/:requestId`,
    sdk: 'console.oauthRequest',
    auth: ['C'],
    tags,
    summary: 'A pending MCP authorization request, with the apps the person may connect it to',
    params: requestParams,
    response: z.object({
      request: oauth.requestSchema,
      apps: z.array(z.object({ id: z.string(), name: z.string(), max_level: levelSchema })),
      user: userSchema,
    }),
    handler: async (s) => {
      const person = personOf(s);
      const tools = toolsOf(s.routes);
      const request = await oauth.describeRequest(s.em, s.params.requestId, tools);
      // The most this person may approve on each app: their role's ceiling, lowered to the app's MCP cap.
      const apps = await Promise.all(
        (await consentApps(s.deps, person.userId)).map(async (a) => ({
          id: a.id,
          name: a.name,
          max_level: lower(LEVEL_CEILING[a.role], appCap(tools, await getSettings(s.em, a.id))),
        })),
      );
      return { request, apps, user: userOf(person) };
    },
  }),
  route({
    method: 'POST',
    path: `${API}/oauth/requests/:requestId/approve`,
    sdk: 'console.approveOAuthRequest',
    // Any person approves for their own apps, up to their role's ceiling (LEVEL_CEILING).
    role: 'viewer',
    auth: ['C'],
    tags,
    summary: 'Approve an MCP authorization request as the signed-in person',
    params: requestParams,
    body: consentBody,
    errors: [403],
    response: z.object({ redirect_url: z.string() }),
    handler: async (s) => {
      const person = personOf(s);
      const pending = await oauth.describeRequest(s.em, s.params.requestId, toolsOf(s.routes));
      const appId = pending.app?.id ?? s.body.app_id;
      const allowed = await consentApps(s.deps, person.userId);
      const target = allowed.find((a) => a.id === appId);
      if (appId && !target) throw new AppError(403, 'This app is not in your workspaces: ask its owner to invite you');
      if (target) {
        const ceiling = LEVEL_CEILING[target.role];
        if (LEVELS.indexOf(s.body.access_level) > LEVELS.indexOf(ceiling))
          throw new AppError(
            403,
            `Your role in this workspace (${target.role}) can approve at most ${ceiling} access for an MCP client`,
          );
      }
      return oauth.approveRequest(
        s.em,
        s.params.requestId,
        {
          user: userOf(person),
          access_level: s.body.access_level,
          app_id: s.body.app_id,
          guardrails: s.body.guardrails,
        },
        s.origin,
        toolsOf(s.routes),
        { person: true, announce: (appId) => s.deps.credentials.announce(appId) },
      );
    },
  }),
  route({
    method: 'POST',
    path: `${API}/oauth/requests/:requestId/deny`,
    sdk: 'console.denyOAuthRequest',
    // Any person approves for their own apps, up to their role's ceiling (LEVEL_CEILING).
    role: 'viewer',
    auth: ['C'],
    tags,
    summary: 'Deny an MCP authorization request',
    params: requestParams,
    errors: [403],
    response: z.object({ redirect_url: z.string() }),
    handler: (s) => oauth.denyRequest(s.em, s.params.requestId, s.origin),
  }),
  route({
    method: 'POST',
    path: `${DEMO_RECEIVER_PATH}/:appId/:mode/:token`,
    sdk: 'console.demoReceiver',
    auth: ['N'],
    tags,
    summary: "The demo workspace's built-in webhook receiver (its path carries its token)",
    params: z.object({ appId: z.string(), mode: z.string(), token: z.string() }),
    idempotency: false,
    writes: false,
    // The service's deliveries to itself: a debug line, not a stream of info lines beside the operator's own.
    log: 'debug',
    response: z.looseObject({}),
    replies: { 401: { description: 'The signature did not verify' }, 500: { description: 'The flaky mode failing' } },
    handler: async (s) => {
      // Only where the demo runs (Deps.demoReceiver is set): the receiver is development code (src/dev/).
      if (!s.deps.demoReceiver) return new Reply(404, { error: 'Not found' });
      const answer = await s.deps.demoReceiver.receive(s.em, {
        pathname: `${DEMO_RECEIVER_PATH}/${s.params.appId}/${s.params.mode}/${s.params.token}`,
        headers: s.headers,
        body: s.rawBody ?? '',
      });
      return new Reply(answer.status, answer.body as Record<string, unknown>);
    },
  }),
  route({
    method: 'POST',
    path: `${AUTH_BASE_PATH}/sign-in/email`,
    sdk: 'console.signIn',
    auth: ['N'],
    tags,
    summary: 'Sign a person in with email and password (sets the HTTP-only session cookie)',
    description:
      'Better Auth answers it. Failed attempts are counted (429 with Retry-After past a limit): from a browser that ' +
      'has signed in to the account before (its HTTP-only sign-in device cookie), on that browser alone; else per ' +
      'account and per client address. A wrong address and a wrong password get the same answer.',
    body: z.object({
      email,
      password: z.string().min(1).max(128),
      rememberMe: z.boolean().optional(),
      callbackURL: z.string().max(2000).optional(),
    }),
    throttle: ['sign-in'],
    errors: [401, 403],
    idempotency: false,
    writes: false,
    response: authAnswer,
    replies: {
      401: { description: 'Wrong email or password', schema: authError },
      403: { description: 'Refused origin', schema: authError },
    },
    handler: (s) => betterAuth(s, 'POST', '/sign-in/email'),
  }),
  route({
    method: 'POST',
    path: `${AUTH_BASE_PATH}/sign-out`,
    sdk: 'console.signOut',
    auth: ['N'],
    tags,
    summary: 'Sign the person out (ends the session and clears its cookie)',
    errors: [401, 403],
    idempotency: false,
    writes: false,
    response: authAnswer,
    replies: {
      401: { description: 'Not signed in', schema: authError },
      403: { description: 'Refused origin', schema: authError },
    },
    handler: (s) => betterAuth(s, 'POST', '/sign-out'),
  }),
  route({
    method: 'GET',
    path: `${AUTH_BASE_PATH}/get-session`,
    sdk: 'console.session',
    auth: ['N'],
    tags,
    summary: 'The session of the cookie sent, or an empty object',
    errors: [401],
    response: z.looseObject({}),
    handler: (s) => betterAuth(s, 'GET', '/get-session'),
  }),
];

/** The accept link of an invitation's secret, on the console people use (APP_URL, else this service's). */
const acceptLink = (s: Pick<Scope<unknown, unknown, unknown>, 'deps' | 'origin'>, secret: string) =>
  `${dashboardUrl(s.deps.config, s.origin)}/invite?token=${encodeURIComponent(secret)}`;

/** Emails an invitation's accept link to the invited address; the answer to its sender carries no link. */
async function mailInvitation(
  s: Scope<{ workspaceId: string }, unknown, unknown>,
  p: People,
  inv: { id: string; email: string; role: Role; expires_at: string; token: string },
  inviter: string,
) {
  const { rows } = await p.pool.query<{ name: string }>(`select coalesce(name, id) as name from orgs where id = $1`, [
    s.params.workspaceId,
  ]);
  const sent = await sendInvitation(s.deps, {
    to: inv.email,
    workspace: rows[0]?.name ?? s.params.workspaceId,
    role: inv.role,
    inviter,
    url: acceptLink(s, inv.token),
    expiresAt: inv.expires_at,
  });
  return {
    id: inv.id,
    email: inv.email,
    role: inv.role,
    expires_at: inv.expires_at,
    email_sent: sent.sent,
    message: sent.message,
  };
}

/**
 * What the console shows to whom, from the route table: each route a person may call (every `/apps/:appId` route
 * served under `/console/api`, and the console's own routes that take a session), by SDK name, with the least role
 * it takes (`requiredRole`, the guard's own rule), whether it writes, and whether the read-only demo allows it.
 */
export function consoleRoles(routes: readonly RouteDef[]) {
  const out: Record<string, { role: Role; writes: boolean; read_only_exempt: boolean }> = {};
  for (const def of routes)
    if (servedToPeople(def) || def.auth.includes('C'))
      out[def.sdk] = { role: requiredRole(def), writes: writes(def), read_only_exempt: !!def.readOnlyExempt };
  return out;
}

const userOf = (p: { userId: string; name: string; email: string }) => ({ id: p.userId, name: p.name, email: p.email });

/** The apps a person may connect an MCP client to: those of their own workspaces (never the read-only demo's). */
async function consentApps(deps: Deps, userId: string) {
  const p = await peopleOf(deps);
  const workspaces = (await workspacesOf(p, userId)).filter((w) => !w.demo);
  const ids = [...new Set(workspaces.flatMap((w) => w.app_ids))];
  const { rows } = await p.pool.query<{ id: string; name: string }>(
    `select id, name from apps where id = any($1) and not read_only`,
    [ids],
  );
  const roleOf = (id: string) =>
    workspaces
      .filter((w) => w.app_ids.includes(id))
      .map((w) => w.role)
      .sort((a, b) => ROLES.indexOf(b) - ROLES.indexOf(a))[0];
  return ids
    .filter((id) => rows.some((r) => r.id === id))
    .map((id) => ({ ...rows.find((r) => r.id === id)!, role: roleOf(id) }));
}

/**
 * The most an MCP connection a person approves may do: no more than the person may do in the console (a viewer
 * reads, a member writes, owners and admins may approve full access).
 */
export const LEVEL_CEILING: Record<Role, 'read' | 'write' | 'full'> = {
  viewer: 'read',
  member: 'write',
  admin: 'full',
  owner: 'full',
};
export const LEVELS = ['read', 'write', 'full'] as const;
