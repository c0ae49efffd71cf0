import { guardrailsInput, type GuardrailsInput } from '../mcp/guardrails.js';
import { describeIssue } from '../http/validate.js';
import { z } from 'zod';
import { dashboardUrl } from '../console-api/urls.js';
import { AppError, notFound } from '../errors.js';
import { staticPageCsp } from '../http/headers.js';
import { Reply, route, type RawBody, type ReplyDoc, type Scope } from '../http/route.js';
import { safeEqual } from '../http/secrets.js';
import { levelSchema } from '../mcp/settings.js';
import {
  consentPage,
  csrfToken,
  errorPage,
  newSession,
  readSession,
  sessionCookie,
  signInPage,
  workspacesOfAdmin,
} from './consent.js';
import * as oauth from './oauth.service.js';
import { toolsOf, type Tool } from '../mcp/tools.js';

const tags = ['OAuth'];
const NO_STORE = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };
/**
 * HTML pages allow no scripts; forms post only here (and, on the consent page, redirect on to the client's redirect
 * URI). `X-Frame-Options` and the other headers every answer carries come from src/http/headers.ts.
 */
const html = (status: number, body: string, headers: Record<string, string> = {}, formTargets: string[] = []) =>
  new Reply(
    status,
    body,
    { ...NO_STORE, 'Content-Security-Policy': staticPageCsp(formTargets), ...headers },
    'text/html; charset=utf-8',
  );

/** The CSP source of a redirect URI: its origin, or its scheme for an app scheme. */
function cspSource(uri: string): string {
  const u = new URL(uri);
  return /^https?:$/.test(u.protocol) ? u.origin : u.protocol;
}
const redirect = (location: string, status = 302, headers: Record<string, string> = {}) =>
  new Reply(status, null, { Location: location, ...NO_STORE, ...headers });

const asMetadata = (origin: string) => oauth.authorizationServerMetadata(origin);

const page = (description: string): ReplyDoc => ({ description, contentType: 'text/html' });
const seeOther = (description: string): ReplyDoc => ({ description });
/** The consent pages answer a request they cannot read with a page too, never JSON (a person is reading). */
const consentInvalid = (message: string) =>
  html(400, errorPage('The form cannot be used', `This request is not one the consent page takes (${message}).`));

const requestParams = z.object({ requestId: z.string().min(1).max(255) });

const consentForm = z.object({
  request: z.string().max(255).optional(),
  csrf: z.string().max(255).optional(),
  decision: z.string().max(20).optional(),
  access_level: z.string().max(20).optional(),
  app_id: z.string().max(255).optional(),
  admin_key: z.string().max(1000).optional(),
  spend_amount: z.string().max(40).optional(),
  spend_currency: z.string().max(10).optional(),
  spend_period: z.string().max(10).optional(),
  usage_entitlement: z.string().max(255).optional(),
  usage_amount: z.string().max(40).optional(),
  usage_period: z.string().max(10).optional(),
});

/** The consent form's optional limits as guard-rails (none filled: undefined), or why they are not valid. */
function formGuardrails(body: z.output<typeof consentForm>): { guardrails?: GuardrailsInput; error?: string } {
  const spend = body.spend_amount?.trim()
    ? { amount: Number(body.spend_amount), currency: (body.spend_currency ?? '').trim(), period: body.spend_period }
    : null;
  const usage = body.usage_entitlement?.trim()
    ? { entitlement_id: body.usage_entitlement.trim(), amount: Number(body.usage_amount), period: body.usage_period }
    : null;
  if (!spend && !usage) return {};
  if (spend && !Number.isFinite(spend.amount))
    return { error: 'Limits: the spend cap amount must be a number, e.g. 50' };
  if (usage && !Number.isInteger(usage.amount))
    return { error: 'Limits: the usage cap amount must be a whole number, e.g. 1000' };
  const parsed = guardrailsInput.safeParse({
    ...(spend ? { spend_cap: spend } : {}),
    ...(usage ? { usage_caps: [usage] } : {}),
  });
  if (!parsed.success) return { error: `Limits: ${describeIssue(parsed.error.issues[0], 'limits')}` };
  return { guardrails: parsed.data };
}

/** A browser POST from another origin is refused (the SameSite=Strict cookie already keeps it signed out). */
function sameOrigin(s: Scope<unknown, unknown, unknown>): boolean {
  const o = s.headers.origin;
  return o === undefined || o === 'null' ? o === undefined : o === s.origin;
}

const WRONG_KEY_DELAY_MS = 1000;

const requestGone = () =>
  html(
    404,
    errorPage(
      'Sign-in request not found',
      'This sign-in request is unknown, has expired (requests last 15 minutes) or was already used.',
    ),
  );

export const oauthRoutes = [
  route({
    method: 'GET',
    path: '/.well-known/oauth-protected-resource/apps/:appId/mcp',
    sdk: 'oauth.protectedResource',
    auth: ['N'],
    tags,
    summary: "Protected resource metadata (RFC 9728) of an app's MCP server",
    params: z.object({ appId: z.string().min(1) }),
    response: oauth.protectedResourceSchema,
    handler: ({ app, origin }) => {
      if (!app) throw notFound('App');
      return oauth.protectedResourceMetadata(origin, app);
    },
  }),
  route({
    method: 'GET',
    path: '/.well-known/oauth-protected-resource',
    sdk: 'oauth.protectedResourceOfOrigin',
    auth: ['N'],
    tags,
    summary: 'Protected resource metadata (RFC 9728) of the API origin',
    response: oauth.protectedResourceSchema,
    handler: ({ origin }) => oauth.protectedResourceMetadata(origin, null),
  }),
  route({
    method: 'GET',
    path: '/.well-known/oauth-authorization-server',
    sdk: 'oauth.serverMetadata',
    auth: ['N'],
    tags,
    summary: 'Authorization server metadata (RFC 8414)',
    response: oauth.authorizationServerSchema,
    handler: ({ origin }) => asMetadata(origin),
  }),
  route({
    method: 'GET',
    path: '/.well-known/oauth-authorization-server/*rest',
    sdk: 'oauth.serverMetadataSuffixed',
    auth: ['N'],
    tags,
    summary: 'Authorization server metadata (RFC 8414), path-suffixed form',
    response: oauth.authorizationServerSchema,
    handler: ({ origin }) => asMetadata(origin),
  }),
  route({
    method: 'GET',
    path: '/.well-known/openid-configuration',
    sdk: 'oauth.openidConfiguration',
    auth: ['N'],
    tags,
    summary: 'Authorization server metadata (RFC 8414) at the OpenID discovery path',
    response: oauth.authorizationServerSchema,
    handler: ({ origin }) => asMetadata(origin),
  }),
  route({
    method: 'POST',
    path: '/oauth/register',
    throttle: ['register'],
    sdk: 'oauth.register',
    auth: ['N'],
    tags,
    summary: 'Dynamic client registration (RFC 7591)',
    description: 'Redirect URIs must be HTTPS, HTTP on a loopback host (any port), or an app scheme.',
    oauth: { invalidInput: 'invalid_client_metadata' },
    body: oauth.registerBody,
    status: 201,
    response: oauth.clientSchema,
    handler: async ({ em, body }) => new Reply(201, await oauth.registerClient(em, body), NO_STORE),
  }),
  route({
    method: 'GET',
    path: '/oauth/authorize',
    throttle: ['authorize'],
    sdk: 'oauth.authorize',
    auth: ['N'],
    tags,
    summary: 'Authorization request (code with PKCE S256)',
    description:
      'Saves the request for 15 minutes and redirects the browser to the consent page, `{dashboard_url}/oauth/consent`: ' +
      "`APP_URL/oauth/consent`, or by default the console's (`/console/oauth/consent`), where a person signs in. " +
      'Errors are an HTML page.',
    query: oauth.authorizeQuery,
    invalidInput: (message) =>
      html(400, errorPage('Sign-in cannot continue', `The sign-in request is not valid (${message}).`)),
    replies: {
      302: seeOther(
        "To the consent page; or, when the client and its redirect URI are valid but the request is not, to the client's " +
          'redirect URI with `error` and `error_description` (RFC 6749 4.1.2.1)',
      ),
      400: page('The client or its redirect URI is not valid (an HTML page; nothing is sent back to the client)'),
      429: page(
        'Too many authorization requests, or client metadata document fetches, from this address (an HTML page, ' +
          'with Retry-After)',
      ),
      503: page('Too many clients from metadata documents are waiting for their first sign-in (with Retry-After)'),
    },
    handler: async ({ em, deps, origin, query, ip }) => {
      try {
        const id = await oauth.saveAuthorizationRequest(deps, em, origin, query, ip);
        const consent = new URL(`${dashboardUrl(deps.config, origin)}/oauth/consent`);
        consent.searchParams.set('request', id);
        return redirect(consent.toString());
      } catch (err) {
        if (err instanceof oauth.AuthorizeError) return html(400, errorPage('Sign-in cannot continue', err.message));
        if (err instanceof oauth.AuthorizeRedirect) return redirect(err.location(origin));
        if (err instanceof oauth.MetadataThrottled)
          return html(err.status, errorPage('Sign-in cannot continue now', err.message), {
            'Retry-After': String(err.retryAfterSeconds),
          });
        throw err;
      }
    },
  }),
  route({
    method: 'POST',
    path: '/oauth/token',
    throttle: ['token-grant'],
    sdk: 'oauth.token',
    auth: ['N'],
    tags,
    summary: 'Token endpoint: authorization_code (with code_verifier) or refresh_token',
    description:
      'Access tokens `mcp_at_...` last 1 hour; refresh tokens `mcp_rt_...` 30 days and rotate: each refresh ' +
      'replaces both, and the old pair stops working. ' +
      'Past OAUTH_TOKEN_FAILURE_LIMIT failed grants (invalid_grant, invalid_client) from an address, further failures ' +
      'are 429 `too_many_requests` with Retry-After; a valid grant is never refused.',
    oauth: true,
    body: oauth.tokenBody,
    response: oauth.tokenSchema,
    errors: [401],
    handler: async ({ em, deps, headers, body, origin, routes }) =>
      new Reply(200, await oauth.exchangeToken(deps, em, headers, body, origin, toolsOf(routes)), NO_STORE),
  }),
  route({
    method: 'POST',
    path: '/oauth/revoke',
    sdk: 'oauth.revoke',
    auth: ['N'],
    tags,
    summary: 'Token revocation (RFC 7009); ends the connection',
    oauth: true,
    body: oauth.revokeBody,
    response: z.object({}),
    errors: [401],
    handler: ({ em, deps, headers, body }) => oauth.revokeToken(deps, em, headers, body),
  }),
  route({
    method: 'GET',
    path: '/oauth/requests/:requestId',
    sdk: 'oauth.getRequest',
    auth: ['A'],
    tags,
    summary: 'A pending authorization request; 404 once used or expired',
    params: requestParams,
    response: oauth.requestSchema,
    handler: ({ em, params, routes }) => oauth.describeRequest(em, params.requestId, toolsOf(routes)),
  }),
  route({
    method: 'POST',
    path: '/oauth/requests/:requestId/approve',
    sdk: 'oauth.approveRequest',
    auth: ['A'],
    tags,
    summary: 'Approve a pending request; returns the redirect URL with the code',
    description:
      '`app_id` is needed when the client named no server URL. Approving the same client for the same person again ' +
      "updates the existing connection's level.",
    params: requestParams,
    body: oauth.approveBody,
    errors: [403],
    response: z.object({ redirect_url: z.string() }),
    handler: ({ em, deps, params, body, origin, routes }) =>
      oauth.approveRequest(em, params.requestId, body, origin, toolsOf(routes), {
        announce: (appId) => deps.credentials.announce(appId),
      }),
  }),
  route({
    method: 'POST',
    path: '/oauth/requests/:requestId/deny',
    sdk: 'oauth.denyRequest',
    auth: ['A'],
    tags,
    summary: 'Deny a pending request; returns the redirect URL with error=access_denied',
    params: requestParams,
    response: z.object({ redirect_url: z.string() }),
    handler: ({ em, params, origin }) => oauth.denyRequest(em, params.requestId, origin),
  }),
  route({
    method: 'GET',
    path: '/oauth/consent',
    sdk: 'oauth.consentPage',
    auth: ['N'],
    tags,
    summary: "The service's own consent page (HTML), used when APP_URL is not set",
    description:
      'The operator signs in with the admin key (a 12-hour HttpOnly, SameSite=Strict session cookie), sees the ' +
      'client, picks an access level and, when the client named no server URL, an app; then approves or denies.',
    query: z.object({ request: z.string().max(255).optional() }),
    invalidInput: consentInvalid,
    replies: {
      200: page('The sign-in form, or the consent form once signed in'),
      400: page('The consent form with a problem to fix'),
      404: page('The request expired or was used'),
    },
    handler: async ({ em, deps, headers, query, routes }) => {
      const requestId = query.request ?? '';
      // An unknown or expired request says so at once, rather than asking for a sign-in that leads nowhere.
      if (!(await oauth.requestPending(em, requestId))) return requestGone();
      const session = readSession(headers.cookie, deps.adminKey);
      if (!session) return html(200, signInPage(requestId));
      return showConsent(em, deps.adminKey, session, requestId, toolsOf(routes));
    },
  }),
  route({
    method: 'POST',
    path: '/oauth/consent/sign-in',
    throttle: ['consent-sign-in'],
    sdk: 'oauth.consentSignIn',
    auth: ['N'],
    tags,
    summary: 'Consent page sign-in with the admin key (form)',
    form: true,
    body: consentForm,
    invalidInput: consentInvalid,
    replies: {
      303: seeOther('Signed in: back to the consent page'),
      400: page('The form cannot be read (an unknown or repeated field, text that is not UTF-8)'),
      401: page('The sign-in form again: wrong admin key'),
      403: page('Sent from another origin'),
      429: page('Too many wrong admin keys from this address (with Retry-After); the right key is never refused'),
    },
    handler: async (s) => {
      const requestId = s.body.request ?? '';
      if (!sameOrigin(s))
        return html(403, errorPage('Not allowed', 'This form must be sent from the sign-in page itself.'));
      if (!s.body.admin_key || !safeEqual(s.body.admin_key, s.deps.adminKey)) {
        // A wrong key costs a second, so guessing through this form is slow.
        await new Promise((resolve) => setTimeout(resolve, WRONG_KEY_DELAY_MS));
        return html(401, signInPage(requestId, 'That admin key is not right.'));
      }
      return redirect(`/oauth/consent?request=${encodeURIComponent(requestId)}`, 303, {
        'Set-Cookie': sessionCookie(newSession(s.deps.adminKey), s.origin.startsWith('https:')),
      });
    },
  }),
  route({
    method: 'POST',
    path: '/oauth/consent/sign-out',
    sdk: 'oauth.consentSignOut',
    auth: ['N'],
    tags,
    summary: 'Consent page sign-out (form)',
    form: true,
    body: consentForm,
    invalidInput: consentInvalid,
    replies: {
      303: seeOther('Signed out: back to the consent page'),
      400: page('The form cannot be read (an unknown or repeated field, text that is not UTF-8)'),
      403: page('Sent from another origin'),
    },
    handler: (s) => {
      if (!sameOrigin(s))
        return html(403, errorPage('Not allowed', 'This form must be sent from the consent page itself.'));
      return redirect(`/oauth/consent?request=${encodeURIComponent(s.body.request ?? '')}`, 303, {
        'Set-Cookie': sessionCookie('', s.origin.startsWith('https:'), 0),
      });
    },
  }),
  route({
    method: 'POST',
    path: '/oauth/consent',
    sdk: 'oauth.consentDecision',
    auth: ['N'],
    tags,
    summary: 'Consent page decision (form): approve or deny',
    form: true,
    body: consentForm,
    invalidInput: consentInvalid,
    replies: {
      200: page('The consent form again (no decision made)'),
      303: seeOther("To the client's redirect URI, with the code or error=access_denied"),
      400: page('The consent form with a problem to fix'),
      401: page('The sign-in form: the session ended'),
      403: page('Sent from another origin, or a wrong form token'),
      404: page('The request expired or was used'),
    },
    handler: async (s) => {
      const { em, deps, body } = s;
      const requestId = body.request ?? '';
      const session = readSession(s.headers.cookie, deps.adminKey);
      if (!session) return html(401, signInPage(requestId, 'Your session ended. Sign in again.'));
      if (!sameOrigin(s) || !body.csrf || !safeEqual(body.csrf, csrfToken(deps.adminKey, session, requestId)))
        return html(
          403,
          errorPage('Not allowed', 'This form must be sent from the consent page itself. Reload it and try again.'),
        );
      try {
        if (body.decision === 'deny')
          return redirect((await oauth.denyRequest(em, requestId, s.origin)).redirect_url, 303);
        const level = levelSchema.safeParse(body.access_level);
        if (body.decision !== 'approve' || !level.success)
          return showConsent(
            em,
            deps.adminKey,
            session,
            requestId,
            toolsOf(s.routes),
            'Choose an access level, then Approve or Deny.',
          );
        const limits = formGuardrails(body);
        if (limits.error) return showConsent(em, deps.adminKey, session, requestId, toolsOf(s.routes), limits.error);
        const result = await oauth.approveRequest(
          em,
          requestId,
          {
            user: { id: 'admin', name: 'Administrator (admin key)' },
            access_level: level.data,
            app_id: body.app_id || undefined,
            guardrails: limits.guardrails,
          },
          s.origin,
          toolsOf(s.routes),
          { announce: (appId) => deps.credentials.announce(appId) },
        );
        return redirect(result.redirect_url, 303);
      } catch (err) {
        if (err instanceof AppError && err.status === 404) return requestGone();
        if (err instanceof AppError && err.status < 500)
          return showConsent(em, deps.adminKey, session, requestId, toolsOf(s.routes), err.message);
        throw err;
      }
    },
  }),
];

async function showConsent(
  em: Scope<unknown, unknown, unknown>['em'],
  adminKey: string,
  session: string,
  requestId: string,
  tools: Tool[],
  error?: string,
): Promise<Reply<RawBody>> {
  try {
    const r = await oauth.describeRequest(em, requestId, tools);
    const workspaces = r.app ? null : await workspacesOfAdmin(em);
    return html(error ? 400 : 200, consentPage(r, csrfToken(adminKey, session, requestId), workspaces, error), {}, [
      cspSource(r.redirect_uri),
    ]);
  } catch (err) {
    if (err instanceof AppError && err.status === 404) return requestGone();
    throw err;
  }
}
