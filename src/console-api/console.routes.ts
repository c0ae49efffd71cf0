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
import { AppError, conflict } from '../errors.js';
import { audit } from '../http/audit.js';
import { requiredRole, writes } from '../http/guard.js';
import { ctxOf, Reply, route, type Role, type RouteDef } from '../http/route.js';
import { servedToPeople } from '../http/router.js';
import * as webhookEndpoints from '../webhooks/endpoints.service.js';
import { endpointParams } from '../webhooks/webhooks.schemas.js';
import { AUTH_BASE_PATH, clearSetupTokens, consumeSetupToken, countOwners } from '../people/better-auth.js';
import {
  addAppToWorkspace,
  createWorkspace,
  freeWorkspaceId,
  personExists,
  workspacesOf,
} from '../people/workspaces.js';
import { DEMO_RECEIVER_PATH } from './urls.js';
import { temporalUiUrl } from '../temporal/ui.js';
import {
  API,
  appBody,
  appParams,
  authAnswer,
  authError,
  betterAuth,
  email,
  meSchema,
  passwordOk,
  peopleOf,
  personOf,
  requireWorkspaceRole,
  roleSchema,
  sameSite,
  sessionPerson,
  setupBody,
  slugify,
  tags,
  userSchema,
  workspaceParams,
} from './console.shared.js';
import { memberRoutes } from './members.routes.js';
import { consentRoutes } from './consent.routes.js';

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
  ...memberRoutes,
  ...consentRoutes,
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
export function consoleRoles(routes: readonly RouteDef[]) {
  const out: Record<string, { role: Role; writes: boolean; read_only_exempt: boolean }> = {};
  for (const def of routes)
    if (servedToPeople(def) || def.auth.includes('C'))
      out[def.sdk] = { role: requiredRole(def), writes: writes(def), read_only_exempt: !!def.readOnlyExempt };
  return out;
}
