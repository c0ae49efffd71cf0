// The authorization request: checking it, the consent page's view of it, approval (a connection and a code) and denial.
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import type { Deps } from '../deps.js';
import { sql } from '../db/sql.js';
import { badRequest, forbidden, notFound } from '../errors.js';
import { loadApp } from '../http/credentials.js';
import { randomToken } from '../ids.js';
import { guardrailsInput, mergeGuardrails } from '../mcp/guardrails.js';
import { covers, getSettings, levelOfScope, levelSchema, SCOPES } from '../mcp/settings.js';
import { newConnectionId } from '../mcp/connections.js';
import { iso } from '../time.js';
import { CODE_SECONDS, REQUEST_SECONDS, sha256 } from './tokens.js';
import { decodeComponent } from '../http/validate.js';
import { appCap, lower, type Tool } from '../mcp/tools.js';
import { ClientMetadataError, isMetadataDocumentId, loadMetadataClient } from './client-metadata.js';
import { findClient, redirectUriProblem } from './clients.service.js';

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
