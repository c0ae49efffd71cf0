import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { sql } from '../db/sql.js';
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

/**
 * The caller behind an `mcp_at_` access token on this app, or null (unknown, expired, revoked, other app).
 * The caller carries the token's audience; the MCP route refuses it on any other server URL.
 */
export async function verifyAccessToken(
  em: EntityManager,
  appId: string,
  token: string,
): Promise<Extract<Caller, { kind: 'oauth' }> | null> {
  const [row] = await sql<{ id: string; access_level: Level; audience: string | null }>(
    em,
    `select c.id, c.access_level, t.audience from oauth_tokens t join mcp_connections c on c.id = t.connection_id
      where t.hash = $1 and t.kind = 'access' and t.expires_at > now() and c.app_id = $2 and c.kind = 'oauth'
        and ${PERSON_STILL_ALLOWS}`,
    [sha256(token), appId],
  );
  return row ? { kind: 'oauth', connectionId: row.id, level: row.access_level, audience: row.audience } : null;
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
