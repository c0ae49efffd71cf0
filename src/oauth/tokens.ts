import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { prepared, sql } from '../db/sql.js';
import type { AccessTokenVerifier } from '../deps.js';
import type { CredentialCache } from '../http/credential-cache.js';
import type { Caller } from '../http/route.js';
import { randomToken } from '../ids.js';
import type { Level } from '../mcp/mcp.entities.js';

/** Tokens, codes and client secrets are stored only as SHA-256 hashes (hex). */
export const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

export const ACCESS_TOKEN_SECONDS = 3600;
export const REFRESH_TOKEN_SECONDS = 30 * 24 * 3600;
export const CODE_SECONDS = 5 * 60;
export const REQUEST_SECONDS = 15 * 60;

export const mintSecret = (prefix: string) => `${prefix}_${randomToken(40)}`;

/**
 * SQL condition on a connection `c`: approved with the admin key, or by a person who is still a member of a
 * workspace listing the app with a role whose ceiling covers the connection's level (viewer read, member write,
 * admin and owner full). A person who leaves the workspace, or is lowered below the level, stops the connection
 * on its next call and refresh.
 */
export const PERSON_STILL_ALLOWS = `(not c.person or exists (
  select 1 from workspace_members m join orgs o on o.id = m.org_id
   where m.user_id = c.user_id and o.app_ids ? c.app_id
     and case c.access_level when 'read' then true when 'write' then m.role in ('member', 'admin', 'owner')
         else m.role in ('admin', 'owner') end))`;

/** What an access token stands for: its connection, level and audience, and when it stops working (this clock). */
interface TokenGrant {
  connectionId: string;
  level: Level;
  audience: string | null;
  /** `Date.now()` past which the token has expired (the database's expiry, as seconds left when it was read). */
  expiresAt: number;
}

async function loadAccessToken(em: EntityManager, appId: string, hash: string): Promise<TokenGrant | null> {
  const [row] = await prepared<{ id: string; access_level: Level; audience: string | null; left_ms: number }>(
    em,
    'mcp_access_token',
    `select c.id, c.access_level, t.audience,
            (extract(epoch from t.expires_at - now()) * 1000)::float8 as left_ms
       from oauth_tokens t join mcp_connections c on c.id = t.connection_id
      where t.hash = $1 and t.kind = 'access' and t.expires_at > now() and c.app_id = $2 and c.kind = 'oauth'
        and ${PERSON_STILL_ALLOWS}`,
    [hash, appId],
  );
  return row
    ? { connectionId: row.id, level: row.access_level, audience: row.audience, expiresAt: Date.now() + row.left_ms }
    : null;
}

const asCaller = (g: TokenGrant): Extract<Caller, { kind: 'oauth' }> => ({
  kind: 'oauth',
  connectionId: g.connectionId,
  level: g.level,
  audience: g.audience,
});

/**
 * The caller behind an `mcp_at_` access token on this app, or null (unknown, expired, revoked, other app, or a
 * person who no longer holds the role it needs). Read from the database each time; `cachedAccessTokens` keeps it.
 * The caller carries the token's audience; the MCP route refuses it on any other server URL.
 */
export async function verifyAccessToken(
  em: EntityManager,
  appId: string,
  token: string,
): Promise<Extract<Caller, { kind: 'oauth' }> | null> {
  const grant = await loadAccessToken(em, appId, sha256(token));
  return grant ? asCaller(grant) : null;
}

/**
 * `verifyAccessToken` kept beside the app in this process's credential cache (the secret key's check costs no
 * statement, and neither does a token's now), under the cache's rules: a token revoked, a connection removed or
 * changed, or a workspace membership changed announces itself as a change to the app (the triggers of migration
 * Migration20261222090000_mcp_oauth_cache), every process drops what it kept, and the writer waits for their answers
 * before it answers. Only tokens found are kept (a guess is read each time), and a kept token stops at its expiry.
 */
export function cachedAccessTokens(credentials: CredentialCache): AccessTokenVerifier {
  return async (em, appId, token) => {
    const hash = sha256(token);
    const key = `oauth.token:${hash}`;
    const grant = await credentials.companion(
      appId,
      key,
      () => loadAccessToken(em, appId, hash),
      (g) => g !== null,
    );
    if (!grant) return null;
    if (grant.expiresAt <= Date.now()) {
      credentials.forget(appId, key);
      return null;
    }
    return asCaller(grant);
  };
}

/**
 * Issues a new access and refresh token pair for a connection (only the hashes are kept), in the token
 * family of one grant and for one audience (the MCP server URL).
 */
export async function issueTokenPair(
  em: EntityManager,
  connectionId: string,
  grant: { familyId: string; audience: string },
) {
  const access = mintSecret('mcp_at');
  const refresh = mintSecret('mcp_rt');
  const pair = `tkp_${randomToken(20)}`;
  await sql(
    em,
    `insert into oauth_tokens (hash, kind, pair_id, family_id, audience, connection_id, expires_at) values
      ($1, 'access', $3, $7, $8, $4, now() + make_interval(secs => $5)),
      ($2, 'refresh', $3, $7, $8, $4, now() + make_interval(secs => $6))`,
    [
      sha256(access),
      sha256(refresh),
      pair,
      connectionId,
      ACCESS_TOKEN_SECONDS,
      REFRESH_TOKEN_SECONDS,
      grant.familyId,
      grant.audience,
    ],
  );
  return { access, refresh };
}

export const newFamilyId = () => `tkf_${randomToken(20)}`;
