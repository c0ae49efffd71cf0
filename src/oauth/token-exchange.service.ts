// The token endpoint (code and refresh grants, RFC 6749 with PKCE and resource indicators), revocation and purging.
import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import type { Deps } from '../deps.js';
import { deleteInBatches, sql } from '../db/sql.js';
import { safeEqual } from '../http/secrets.js';
import type { Level } from '../mcp/mcp.entities.js';
import { getSettings, scopeOf } from '../mcp/settings.js';
import { ACCESS_TOKEN_SECONDS, issueTokenPair, newFamilyId, PERSON_STILL_ALLOWS, sha256 } from './tokens.js';
import { decodeComponent } from '../http/validate.js';
import { appCap, lower, type Tool } from '../mcp/tools.js';
import { mcpResourceUrl, oauthError } from './metadata.js';
import { findClient, type ClientRow } from './clients.service.js';

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
