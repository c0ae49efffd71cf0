// OAuth client registration (RFC 7591) and lookup; metadata-document clients are in client-metadata.ts.
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { sql } from '../db/sql.js';
import { randomToken } from '../ids.js';
import { mintSecret, sha256 } from './tokens.js';
import { oauthError } from './metadata.js';

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

export interface ClientRow {
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
