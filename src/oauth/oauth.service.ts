import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import type { Deps } from '../deps.js';
import { deleteInBatches, sql } from '../db/sql.js';
import { AppError, badRequest, forbidden, notFound } from '../errors.js';
import { loadApp } from '../http/credentials.js';
import { safeEqual } from '../http/secrets.js';
import { randomToken } from '../ids.js';
import type { Level } from '../mcp/mcp.entities.js';
import { guardrailsInput, mergeGuardrails } from '../mcp/guardrails.js';
import { covers, getSettings, levelOfScope, levelSchema, scopeOf, SCOPES } from '../mcp/settings.js';
import { newConnectionId } from '../mcp/connections.js';
import { iso } from '../time.js';
import {
  ACCESS_TOKEN_SECONDS,
  CODE_SECONDS,
  issueTokenPair,
  mintSecret,
  newFamilyId,
  REQUEST_SECONDS,
  PERSON_STILL_ALLOWS,
  sha256,
} from './tokens.js';
import { decodeComponent } from '../http/validate.js';
import { appCap, lower, type Tool } from '../mcp/tools.js';
import { ClientMetadataError, isMetadataDocumentId, loadMetadataClient } from './client-metadata.js';
export { MetadataThrottled } from './client-metadata.js';

/** An OAuth error (RFC 6749 section 5.2): `{ error, error_description }`. */
export const oauthError = (status: number, error: string, description: string, headers?: Record<string, string>) =>
  new AppError(status, error, { error_description: description }, headers);

// ---- metadata -------------------------------------------------------------------------------------

export const mcpResourceUrl = (origin: string, appId: string) => `${origin}/apps/${encodeURIComponent(appId)}/mcp`;

export const protectedResourceSchema = z.object({
  resource: z.string(),
  authorization_servers: z.array(z.string()),
  scopes_supported: z.array(z.string()),
  bearer_methods_supported: z.array(z.string()),
  resource_name: z.string().optional(),
});

/** RFC 9728 protected resource metadata: for one app's MCP server, or (no app) for the API origin. */
export function protectedResourceMetadata(
  origin: string,
  app: { id: string; name: string } | null,
): z.input<typeof protectedResourceSchema> {
  return {
    resource: app ? mcpResourceUrl(origin, app.id) : origin,
    authorization_servers: [origin],
    scopes_supported: SCOPES,
    bearer_methods_supported: ['header'],
    ...(app ? { resource_name: `offerkit MCP server: ${app.name}` } : {}),
  };
}

export const authorizationServerSchema = z.object({
  issuer: z.string(),
  authorization_endpoint: z.string(),
  token_endpoint: z.string(),
  registration_endpoint: z.string(),
  revocation_endpoint: z.string(),
  scopes_supported: z.array(z.string()),
  response_types_supported: z.array(z.string()),
  response_modes_supported: z.array(z.string()),
  grant_types_supported: z.array(z.string()),
  code_challenge_methods_supported: z.array(z.string()),
  authorization_response_iss_parameter_supported: z.boolean(),
  token_endpoint_auth_methods_supported: z.array(z.string()),
  revocation_endpoint_auth_methods_supported: z.array(z.string()),
  client_id_metadata_document_supported: z.boolean(),
});

/** RFC 8414 authorization server metadata. */
export function authorizationServerMetadata(origin: string): z.input<typeof authorizationServerSchema> {
  return {
    issuer: origin,
    authorization_endpoint: `${origin}/oauth/authorize`,
    token_endpoint: `${origin}/oauth/token`,
    registration_endpoint: `${origin}/oauth/register`,
    revocation_endpoint: `${origin}/oauth/revoke`,
    scopes_supported: SCOPES,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    // RFC 9207: the redirect back to the client names the issuer, against mix-up attacks.
    authorization_response_iss_parameter_supported: true,
    token_endpoint_auth_methods_supported: ['none', 'client_secret_post', 'client_secret_basic'],
    revocation_endpoint_auth_methods_supported: ['none', 'client_secret_post', 'client_secret_basic'],
    // A client_id may be the https URL of the client's metadata document (src/oauth/client-metadata.ts).
    client_id_metadata_document_supported: true,
  };
}

// ---- registration (RFC 7591) -----------------------------------------------------------------------

const FORBIDDEN_SCHEMES = new Set([
  'javascript:',
  'data:',
  'file:',
  'vbscript:',
  'about:',
  'blob:',
  'ftp:',
  'ws:',
  'wss:',
]);
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** HTTPS; HTTP only on a loopback host (any port); or an app's own scheme (`com.example.app:/cb`). No fragments. */
export function redirectUriProblem(uri: string): string | null {
  if (!URL.canParse(uri)) return `${uri} is not an absolute URI`;
  const u = new URL(uri);
  if (u.hash) return `${uri} must not have a fragment`;
  if (u.protocol === 'https:') return null;
  if (u.protocol === 'http:')
    return LOOPBACK.has(u.hostname)
      ? null
      : `${uri}: plain http is only allowed on a loopback host (localhost, 127.0.0.1, [::1])`;
  if (FORBIDDEN_SCHEMES.has(u.protocol)) return `${uri}: the ${u.protocol} scheme is not allowed`;
  return /^[a-z][a-z0-9+.-]*:$/i.test(u.protocol) ? null : `${uri} has an invalid scheme`;
}

export const registerBody = z.object({
  redirect_uris: z.array(z.string().max(2000)).min(1).max(20),
  client_name: z.string().max(200).optional(),
  token_endpoint_auth_method: z.enum(['none', 'client_secret_post', 'client_secret_basic']).default('none'),
  grant_types: z.array(z.string()).optional(),
  response_types: z.array(z.string()).optional(),
  client_uri: z.string().max(2000).optional(),
  logo_uri: z.string().max(2000).optional(),
  scope: z.string().max(500).optional(),
});

/** A registered client (RFC 7591 section 3.2.1): its metadata as kept, with the id and, for confidential clients, the secret. */
export const clientSchema = z.object({
  client_id: z.string(),
  client_id_issued_at: z.number(),
  client_secret: z.string().optional(),
  client_secret_expires_at: z.number().optional(),
  redirect_uris: z.array(z.string()),
  token_endpoint_auth_method: z.enum(['none', 'client_secret_post', 'client_secret_basic']),
  grant_types: z.array(z.string()),
  response_types: z.array(z.string()),
  client_name: z.string().optional(),
  client_uri: z.string().optional(),
  logo_uri: z.string().optional(),
});

export async function registerClient(
  em: EntityManager,
  body: z.output<typeof registerBody>,
): Promise<z.input<typeof clientSchema>> {
  for (const uri of body.redirect_uris) {
    const problem = redirectUriProblem(uri);
    if (problem) throw oauthError(400, 'invalid_redirect_uri', problem);
  }
  const badGrant = (body.grant_types ?? []).find((g) => g !== 'authorization_code' && g !== 'refresh_token');
  if (badGrant) throw oauthError(400, 'invalid_client_metadata', `grant_types: ${badGrant} is not supported`);
  if ((body.response_types ?? []).some((t) => t !== 'code'))
    throw oauthError(400, 'invalid_client_metadata', 'response_types: only code is supported');
  for (const [field, value] of [
    ['client_uri', body.client_uri],
    ['logo_uri', body.logo_uri],
  ] as const) {
    if (value !== undefined && !(URL.canParse(value) && /^https?:$/.test(new URL(value).protocol)))
      throw oauthError(400, 'invalid_client_metadata', `${field}: must be an http(s) URL`);
  }
  const id = `mcpc_${randomToken(24)}`;
  const secret = body.token_endpoint_auth_method === 'none' ? null : mintSecret('mcpcs');
  const [row] = await sql<{ created_at: Date }>(
    em,
    `insert into oauth_clients (id, client_name, redirect_uris, token_endpoint_auth_method, client_secret_hash,
      client_uri, logo_uri) values ($1, $2, $3, $4, $5, $6, $7) returning created_at`,
    [
      id,
      body.client_name ?? null,
      JSON.stringify(body.redirect_uris),
      body.token_endpoint_auth_method,
      secret ? sha256(secret) : null,
      body.client_uri ?? null,
      body.logo_uri ?? null,
    ],
  );
  return {
    client_id: id,
    client_id_issued_at: Math.floor(new Date(row.created_at).getTime() / 1000),
    ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
    redirect_uris: body.redirect_uris,
    token_endpoint_auth_method: body.token_endpoint_auth_method,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    ...(body.client_name ? { client_name: body.client_name } : {}),
    ...(body.client_uri ? { client_uri: body.client_uri } : {}),
    ...(body.logo_uri ? { logo_uri: body.logo_uri } : {}),
  };
}

interface ClientRow {
  id: string;
  client_name: string | null;
  redirect_uris: string[];
  token_endpoint_auth_method: string;
  client_secret_hash: string | null;
  client_uri: string | null;
  logo_uri: string | null;
}

export async function findClient(em: EntityManager, id: string): Promise<ClientRow | null> {
  const [row] = await sql<ClientRow>(em, 'select * from oauth_clients where id = $1', [id]);
  return row ?? null;
}

// ---- authorization request --------------------------------------------------------------------------

/** A query parameter sent more than once (RFC 6749 forbids it); reported on the error page, not as JSON. */
const REPEATED = '\u0000repeated';
const param = z.preprocess((v) => (Array.isArray(v) ? REPEATED : v), z.string().max(4000).optional());

export const authorizeQuery = z.object({
  response_type: param,
  client_id: param,
  redirect_uri: param,
  code_challenge: param,
  code_challenge_method: param,
  state: param,
  scope: param,
  resource: param,
});

/** A sign-in that cannot go on, shown to the person as an HTML page (never redirected to an unchecked URI). */
export class AuthorizeError extends Error {}

/**
 * A bad request from a known client with a valid redirect URI: sent back to it with `error` and
 * `error_description` (RFC 6749 4.1.2.1), so the client learns why.
 */
export class AuthorizeRedirect extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly redirectUri: string,
    readonly state: string | null,
  ) {
    super(description);
  }
  location(issuer: string): string {
    return withQuery(this.redirectUri, {
      error: this.error,
      error_description: this.description,
      state: this.state,
      iss: issuer,
    });
  }
}

/**
 * Checks an authorization request (PKCE S256 only) and saves it for 15 minutes; returns its id. With
 * `resource`, it must be an app's MCP server URL on this service's own origin (PUBLIC_API_URL).
 */
export async function saveAuthorizationRequest(
  deps: Deps,
  em: EntityManager,
  origin: string,
  q: z.output<typeof authorizeQuery>,
  ip: string,
): Promise<string> {
  const untrusted = (['client_id', 'redirect_uri'] as const).find((k) => q[k] === REPEATED);
  if (untrusted) throw new AuthorizeError(`The parameter ${untrusted} is sent more than once.`);
  if (!q.client_id) throw new AuthorizeError('The request names no client (client_id is missing).');
  if (isMetadataDocumentId(q.client_id, deps.config.WEBHOOKS_ALLOW_PRIVATE_URLS)) {
    try {
      await loadMetadataClient(deps, em, q.client_id, redirectUriProblem, ip);
    } catch (err) {
      if (err instanceof ClientMetadataError) throw new AuthorizeError(err.message);
      throw err;
    }
  }
  const client = await findClient(em, q.client_id);
  if (!client)
    throw new AuthorizeError(
      'This client is not registered here. Register it at /oauth/register first, or use the https URL of its ' +
        'client metadata document as client_id.',
    );
  let redirectUri = q.redirect_uri;
  if (redirectUri === undefined) {
    if (client.redirect_uris.length !== 1)
      throw new AuthorizeError('redirect_uri is missing and the client registered several.');
    redirectUri = client.redirect_uris[0];
  }
  if (!client.redirect_uris.includes(redirectUri))
    throw new AuthorizeError('redirect_uri is not one the client registered.');
  // From here the client and its redirect URI are known good: problems go back to it (RFC 6749 4.1.2.1).
  const state = q.state === REPEATED ? null : (q.state ?? null);
  const back = (error: string, description: string) => new AuthorizeRedirect(error, description, redirectUri, state);
  const repeated = Object.entries(q).find(([, v]) => v === REPEATED);
  if (repeated) throw back('invalid_request', `The parameter ${repeated[0]} is sent more than once`);
  if (q.response_type !== 'code') throw back('unsupported_response_type', 'response_type must be code');
  if (!q.code_challenge) throw back('invalid_request', 'A PKCE code_challenge is required');
  if (q.code_challenge_method !== 'S256')
    throw back('invalid_request', 'code_challenge_method must be S256 (plain is not supported)');
  if (!/^[A-Za-z0-9_-]{43,128}$/.test(q.code_challenge))
    throw back('invalid_request', 'code_challenge must be a base64url SHA-256 digest');
  const unknownScope = (q.scope ?? '')
    .split(/\s+/)
    .filter(Boolean)
    .find((s) => !SCOPES.includes(s));
  if (unknownScope)
    throw back('invalid_scope', `Unknown scope ${unknownScope}; this server offers ${SCOPES.join(', ')}`);
  let appId: string | null = null;
  if (q.resource !== undefined) {
    const notOurs = `${q.resource} is not an MCP server URL of this service (${origin}/apps/<app id>/mcp)`;
    if (!URL.canParse(q.resource)) throw back('invalid_target', 'resource is not a URL');
    const u = new URL(q.resource);
    if (u.origin !== origin)
      throw back(
        'invalid_target',
        `The server URL ${q.resource} is not on this service's origin (${origin}); sign-in works only for servers on ${origin}`,
      );
    const m = /^\/apps\/([^/]+)\/mcp\/?$/.exec(u.pathname);
    if (!m) throw back('invalid_target', notOurs);
    const appPart = decodeComponent(m[1]);
    if (appPart === null) throw back('invalid_target', notOurs);
    const app = await loadApp(em, appPart);
    if (!app) throw back('invalid_target', 'The app of this MCP server does not exist');
    if (!(await getSettings(em, app.id)).enabled)
      throw back('access_denied', "This app's MCP server is turned off, so no one can sign in to it");
    appId = app.id;
  }
  const id = `oar_${randomToken(24)}`;
  await sql(
    em,
    `insert into oauth_requests (id, client_id, redirect_uri, code_challenge, state, scope, resource, app_id,
      expires_at) values ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(secs => $9))`,
    [
      id,
      client.id,
      redirectUri,
      q.code_challenge,
      q.state ?? null,
      q.scope ?? null,
      q.resource ?? null,
      appId,
      REQUEST_SECONDS,
    ],
  );
  return id;
}

interface RequestRow {
  id: string;
  client_id: string;
  redirect_uri: string;
  code_challenge: string;
  state: string | null;
  scope: string | null;
  resource: string | null;
  app_id: string | null;
  expires_at: Date;
  created_at: Date;
}

async function pendingRequest(em: EntityManager, id: string): Promise<RequestRow> {
  const [row] = await sql<RequestRow>(em, 'select * from oauth_requests where id = $1 and expires_at > now()', [id]);
  if (!row) throw notFound('Authorization request');
  return row;
}

/** Whether a request id names a pending (unused, unexpired) authorization request. */
export async function requestPending(em: EntityManager, id: string): Promise<boolean> {
  if (!id) return false;
  const rows = await sql(em, 'select 1 from oauth_requests where id = $1 and expires_at > now()', [id]);
  return rows.length > 0;
}

export const requestSchema = z.object({
  id: z.string(),
  client: z.object({
    id: z.string(),
    name: z.string().nullable(),
    client_uri: z.string().nullable(),
    logo_uri: z.string().nullable(),
  }),
  redirect_uri: z.string(),
  scope: z.string().nullable(),
  requested_level: levelSchema.nullable(),
  /** The most the app's MCP server gives an OAuth connection (its cap); null until an app is picked. */
  max_level: levelSchema.nullable(),
  resource: z.string().nullable(),
  app: z.object({ id: z.string(), name: z.string() }).nullable(),
  expires_at: z.string(),
  created_at: z.string(),
});

/** A pending request as the consent page shows it; 404 once used or expired. */
export async function describeRequest(
  em: EntityManager,
  id: string,
  tools: Tool[],
): Promise<z.output<typeof requestSchema>> {
  const r = await pendingRequest(em, id);
  const client = (await findClient(em, r.client_id))!;
  const app = r.app_id ? await loadApp(em, r.app_id) : null;
  const cap = app ? appCap(tools, await getSettings(em, app.id)) : null;
  const requested = levelOfScope(r.scope);
  return {
    id: r.id,
    client: { id: client.id, name: client.client_name, client_uri: client.client_uri, logo_uri: client.logo_uri },
    redirect_uri: r.redirect_uri,
    scope: r.scope,
    requested_level: requested && cap ? lower(requested, cap) : requested,
    max_level: cap,
    resource: r.resource,
    app: app ? { id: app.id, name: app.name } : null,
    expires_at: iso(r.expires_at)!,
    created_at: iso(r.created_at)!,
  };
}

/** The admin route's body; the console passes `person: true` for a signed-in person's approval. */
export const approveBody = z.object({
  user: z.object({
    id: z.string().min(1).max(255),
    name: z.string().max(200).optional(),
    email: z.string().max(320).optional(),
  }),
  access_level: levelSchema,
  app_id: z.string().min(1).max(255).optional(),
  /** The connection's guard-rails, set by the person approving; omitted on a new approval: kept as they were. */
  guardrails: guardrailsInput.optional(),
});

function withQuery(uri: string, params: Record<string, string | null>): string {
  const u = new URL(uri);
  for (const [k, v] of Object.entries(params)) if (v !== null) u.searchParams.set(k, v);
  return u.toString();
}

/** Claims a pending request (single use): deleting it is what makes a second approval a 404. */
async function claim(em: EntityManager, id: string): Promise<RequestRow> {
  const [row] = await sql<RequestRow>(
    em,
    'delete from oauth_requests where id = $1 and expires_at > now() returning *',
    [id],
  );
  if (!row) throw notFound('Authorization request');
  return row;
}

/**
 * Approves a request for a person: the connection of the same person and client on the app takes the
 * new level (or is created), and a single-use code valid 5 minutes goes back to the client.
 */
export async function approveRequest(
  em: EntityManager,
  id: string,
  body: z.output<typeof approveBody>,
  issuer: string,
  tools: Tool[],
  opts: {
    /** Approved by a person in the console (not with the admin key). */
    person?: boolean;
    /** Announces a changed connection to every API process and waits for them (`CredentialCache.announce`). */
    announce: (appId: string) => Promise<unknown>;
  },
): Promise<{ redirect_url: string }> {
  const person = opts.person ?? false;
  const pending = await pendingRequest(em, id);
  const appId = pending.app_id ?? body.app_id;
  if (!appId) throw badRequest('app_id: is required when the client named no server URL (resource)');
  if (pending.app_id && body.app_id && body.app_id !== pending.app_id)
    throw badRequest(`app_id: the client asked for the MCP server of ${pending.app_id}`);
  const app = await loadApp(em, appId);
  if (!app) throw notFound('App');
  const settings = await getSettings(em, app.id);
  if (!settings.enabled) throw forbidden("This app's MCP server is turned off");
  const cap = appCap(tools, settings);
  if (!covers(cap, body.access_level))
    throw badRequest(
      `access_level: this app's MCP server gives OAuth connections at most ${cap} access (its MCP settings); ` +
        `approve ${cap} or lower, or raise the app's access level first`,
    );
  const approved = await em.transactional(async (tx) => {
    const r = await claim(tx, id);
    const client = (await findClient(tx, r.client_id))!;
    const [conn] = await sql<{ id: string; updated: boolean }>(
      tx,
      `insert into mcp_connections (id, app_id, kind, name, client_id, user_id, user_name, user_email, access_level,
        person, guardrails)
        values ($1, $2, 'oauth', $3, $4, $5, $6, $7, $8, $9, $10)
       on conflict (app_id, client_id, user_id) where kind = 'oauth'
       do update set access_level = excluded.access_level, user_name = excluded.user_name, user_email =
         excluded.user_email, name = excluded.name, person = excluded.person, cut_off_at = null, cut_off_reason = null,
         guardrails = coalesce(excluded.guardrails, mcp_connections.guardrails)
       returning id, xmax <> 0 as updated`,
      [
        newConnectionId(),
        app.id,
        client.client_name ?? client.id,
        client.id,
        body.user.id,
        body.user.name ?? null,
        body.user.email ?? null,
        body.access_level,
        person,
        body.guardrails ? JSON.stringify(mergeGuardrails(null, body.guardrails)) : null,
      ],
    );
    await sql(tx, 'update oauth_clients set signed_in_at = coalesce(signed_in_at, now()) where id = $1', [client.id]);
    const code = randomToken(43);
    await sql(
      tx,
      `insert into oauth_codes (hash, connection_id, client_id, redirect_uri, code_challenge, resource, expires_at)
        values ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7))`,
      [sha256(code), conn.id, client.id, r.redirect_uri, r.code_challenge, r.resource, CODE_SECONDS],
    );
    return {
      redirect_url: withQuery(r.redirect_uri, { code, state: r.state, iss: issuer }),
      updated: conn.updated,
    };
  });
  // Approving again changes the existing connection (its level, its caps): every process forgets what it kept of
  // it before the client gets its code.
  if (approved.updated) await opts.announce(app.id);
  return { redirect_url: approved.redirect_url };
}

export async function denyRequest(em: EntityManager, id: string, issuer: string): Promise<{ redirect_url: string }> {
  const r = await claim(em, id);
  return {
    redirect_url: withQuery(r.redirect_uri, {
      error: 'access_denied',
      error_description: 'The person denied access',
      state: r.state,
      iss: issuer,
    }),
  };
}

// ---- token and revoke ------------------------------------------------------------------------------

export const tokenBody = z.object({
  // Checked by the handler (an unknown one is `unsupported_grant_type`, RFC 6749); the document names the two.
  grant_type: z.string().meta({ enum: ['authorization_code', 'refresh_token'] }),
  code: z.string().optional(),
  redirect_uri: z.string().optional(),
  code_verifier: z.string().optional(),
  refresh_token: z.string().optional(),
  client_id: z.string().optional(),
  client_secret: z.string().optional(),
  resource: z.string().optional(),
  scope: z.string().optional(),
});

export const revokeBody = z.object({
  token: z.string(),
  token_type_hint: z.string().optional(),
  client_id: z.string().optional(),
  client_secret: z.string().optional(),
});

/** The client of a token or revoke request: HTTP Basic, or `client_id` (and `client_secret`) in the body. */
async function authenticateClient(
  em: EntityManager,
  headers: Record<string, string | undefined>,
  body: { client_id?: string; client_secret?: string },
): Promise<ClientRow> {
  let id = body.client_id;
  let secret = body.client_secret;
  const basic = /^Basic\s+(\S+)$/i.exec(headers.authorization ?? '');
  if (basic) {
    const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw oauthError(401, 'invalid_client', 'Malformed Basic credentials');
    // RFC 6749 2.3.1: both parts are form-urlencoded.
    const [rawId, rawSecret] = [decodeComponent(decoded.slice(0, colon)), decodeComponent(decoded.slice(colon + 1))];
    if (rawId === null || rawSecret === null || rawId.includes('\u0000') || rawSecret.includes('\u0000'))
      throw oauthError(401, 'invalid_client', 'Malformed Basic credentials');
    id = rawId;
    secret = rawSecret;
  }
  if (!id) throw oauthError(401, 'invalid_client', 'client_id is required');
  const client = await findClient(em, id);
  if (!client) throw oauthError(401, 'invalid_client', 'Unknown client');
  if (
    client.client_secret_hash !== null &&
    !(secret !== undefined && safeEqual(sha256(secret), client.client_secret_hash))
  )
    throw oauthError(401, 'invalid_client', 'Wrong or missing client_secret');
  return client;
}

const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

export const tokenSchema = z.object({
  access_token: z.string(),
  token_type: z.literal('Bearer'),
  expires_in: z.number(),
  refresh_token: z.string(),
  scope: z.string(),
});

function tokenResponse(pair: { access: string; refresh: string }, level: Level): z.input<typeof tokenSchema> {
  return {
    access_token: pair.access,
    token_type: 'Bearer',
    expires_in: ACCESS_TOKEN_SECONDS,
    refresh_token: pair.refresh,
    scope: scopeOf(level),
  };
}

/**
 * An RFC 8707 resource as compared: origin and path without a trailing slash, plus the query; null
 * when it is not an absolute URI without a fragment.
 */
export function resourceKey(uri: string): string | null {
  if (!URL.canParse(uri)) return null;
  const u = new URL(uri);
  if (u.hash) return null;
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}${u.search}`;
}

/** `resource` in a token request must name the server the grant is for (RFC 8707 `invalid_target`). */
function checkTarget(requested: string | undefined, audience: string) {
  if (requested === undefined) return;
  const key = resourceKey(requested);
  if (key === null || key !== resourceKey(audience))
    throw oauthError(400, 'invalid_target', `This grant is for ${audience}; it cannot give tokens for ${requested}`);
}

export const REUSE_REASON =
  'A refresh token was used a second time (it may have been stolen), so every token of that sign-in was revoked. ' +
  'Sign in again.';

export async function exchangeToken(
  deps: Deps,
  em: EntityManager,
  headers: Record<string, string | undefined>,
  body: z.output<typeof tokenBody>,
  origin: string,
  tools: Tool[],
) {
  // The scope a token names is what it can do: the connection's level, lowered to the app's cap.
  const scopeLevel = async (appId: string, level: Level) => lower(level, appCap(tools, await getSettings(em, appId)));
  if (body.grant_type !== 'authorization_code' && body.grant_type !== 'refresh_token')
    throw oauthError(400, 'unsupported_grant_type', `grant_type ${body.grant_type} is not supported`);
  const client = await authenticateClient(em, headers, body);
  if (body.grant_type === 'authorization_code') {
    if (!body.code) throw oauthError(400, 'invalid_request', 'code is required');
    if (!body.code_verifier) throw oauthError(400, 'invalid_request', 'code_verifier is required (PKCE)');
    // Single use: the code is deleted (and committed) as it is read, so any second exchange finds
    // nothing, even after a failed one.
    const [code] = await sql<{
      connection_id: string;
      client_id: string;
      redirect_uri: string;
      code_challenge: string;
      resource: string | null;
      expires_at: Date;
    }>(
      em,
      'delete from oauth_codes where hash = $1 returning connection_id, client_id, redirect_uri, code_challenge, ' +
        'resource, expires_at',
      [sha256(body.code)],
    );
    if (!code || new Date(code.expires_at) <= new Date())
      throw oauthError(400, 'invalid_grant', 'The code is unknown, expired or already used');
    if (code.client_id !== client.id) throw oauthError(400, 'invalid_grant', 'The code was issued to another client');
    if (body.redirect_uri !== undefined && body.redirect_uri !== code.redirect_uri)
      throw oauthError(400, 'invalid_grant', 'redirect_uri does not match the authorization request');
    if (!safeEqual(s256(body.code_verifier), code.code_challenge))
      throw oauthError(400, 'invalid_grant', 'code_verifier does not match the code_challenge');
    const [conn] = await sql<{ access_level: Level; app_id: string }>(
      em,
      'select access_level, app_id from mcp_connections where id = $1',
      [code.connection_id],
    );
    if (!conn) throw oauthError(400, 'invalid_grant', 'The connection was removed');
    // The grant is for the server the client named, else the MCP server of the app the person picked.
    const audience = code.resource ?? mcpResourceUrl(origin, conn.app_id);
    checkTarget(body.resource, audience);
    const pair = await issueTokenPair(em, code.connection_id, { familyId: newFamilyId(), audience });
    return tokenResponse(pair, await scopeLevel(conn.app_id, conn.access_level));
  }

  if (!body.refresh_token) throw oauthError(400, 'invalid_request', 'refresh_token is required');
  const refreshHash = sha256(body.refresh_token);
  const outcome = await em.transactional(async (tx) => {
    // The row lock orders racing refreshes: the second one finds the token already rotated.
    const [old] = await sql<{
      pair_id: string;
      family_id: string;
      audience: string | null;
      rotated_at: Date | null;
      connection_id: string;
      client_id: string;
      app_id: string;
      access_level: Level;
    }>(
      tx,
      `select t.pair_id, t.family_id, t.audience, t.rotated_at, t.connection_id, c.client_id, c.app_id, c.access_level
         from oauth_tokens t join mcp_connections c on c.id = t.connection_id
        where t.hash = $1 and t.kind = 'refresh' and t.expires_at > now() and ${PERSON_STILL_ALLOWS}
        for update of t`,
      [refreshHash],
    );
    if (!old) throw oauthError(400, 'invalid_grant', 'The refresh token is unknown, expired or revoked');
    if (old.client_id !== client.id)
      throw oauthError(400, 'invalid_grant', 'The refresh token was issued to another client');
    if (old.rotated_at !== null) {
      // Reuse of a rotated refresh token (OAuth 2.1, RFC 9700 4.14.2): revoke the whole family.
      await sql(tx, 'delete from oauth_tokens where family_id = $1', [old.family_id]);
      await sql(tx, 'update mcp_connections set cut_off_at = now(), cut_off_reason = $2 where id = $1', [
        old.connection_id,
        REUSE_REASON,
      ]);
      return { reused: old.connection_id, appId: old.app_id } as const;
    }
    const audience = old.audience ?? mcpResourceUrl(origin, old.app_id);
    checkTarget(body.resource, audience);
    // Rotation: the old access token goes; the old refresh token is kept, marked, until it expires.
    await sql(tx, 'update oauth_tokens set rotated_at = now() where hash = $1', [refreshHash]);
    await sql(tx, `delete from oauth_tokens where pair_id = $1 and kind = 'access'`, [old.pair_id]);
    const pair = await issueTokenPair(tx, old.connection_id, { familyId: old.family_id, audience });
    return {
      response: tokenResponse(pair, await scopeLevel(old.app_id, old.access_level)),
      connectionId: old.connection_id,
      appId: old.app_id,
    } as const;
  });
  // The old access token (or, on reuse, every token of the sign-in) stops working in every API process before the
  // client is answered.
  await deps.credentials.announce(outcome.appId);
  if ('reused' in outcome) {
    deps.logger.warn({ connectionId: outcome.reused }, 'refresh token reused: token family revoked');
    throw oauthError(
      400,
      'invalid_grant',
      'The refresh token was already used; every token of this sign-in is revoked',
    );
  }
  deps.logger.debug({ connectionId: outcome.connectionId }, 'MCP tokens refreshed');
  return outcome.response;
}

/** RFC 7009: revoking an access or refresh token ends its connection. Unknown tokens are a silent success. */
export async function revokeToken(
  deps: Deps,
  em: EntityManager,
  headers: Record<string, string | undefined>,
  body: z.output<typeof revokeBody>,
) {
  const client = await authenticateClient(em, headers, body);
  const [gone] = await sql<{ app_id: string }>(
    em,
    `delete from mcp_connections where client_id = $2 and id = (select connection_id from oauth_tokens where hash =
      $1) returning app_id`,
    [sha256(body.token), client.id],
  );
  // Revoked in every API process (each keeps a token's check beside the app) before the client is answered.
  if (gone) await deps.credentials.announce(gone.app_id);
  return {};
}

/**
 * Expired requests, codes and tokens, and registered clients that never completed a sign-in within
 * `unusedClientHours`; removed by the hourly retention workflow.
 */
export async function purgeExpiredOAuth(em: EntityManager, unusedClientHours: number): Promise<number> {
  let n = 0;
  for (const table of ['oauth_requests', 'oauth_codes', 'oauth_tokens'])
    n += (await sql(em, `delete from ${table} where expires_at < now() - interval '1 day' returning 1`)).length;
  n += await deleteInBatches(
    em,
    `delete from oauth_clients where id in (select id from oauth_clients where signed_in_at is null and created_at <
      now() - make_interval(hours => $1) limit $2) returning 1`,
    [unusedClientHours],
  );
  return n;
}
