import type { EntityManager } from '@mikro-orm/postgresql';
import { Agent, request } from 'undici';
import { z } from 'zod';
import { sql } from '../db/sql.js';
import type { Deps } from '../deps.js';
import { limitsFor } from '../security/rate-limits.js';
import { checkWebhookUrl, guardedLookup, UrlPolicyError, type Resolver } from '../webhooks/url-policy.js';

/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, the registration the MCP
 * authorization spec of 2025-11-25 recommends): a client whose `client_id` is an https URL publishes its metadata
 * (`client_id`, `redirect_uris`, `client_name`...) at that URL; the service fetches it instead of a registration.
 */

/** How long a fetch may take, in all (connect, headers, body). */
export const METADATA_TIMEOUT_MS = 5_000;
/** The largest document read (the draft suggests 5 kB); a larger one is refused. */
export const METADATA_MAX_BYTES = 5_120;
/** How long a fetched document is used without fetching again: its `Cache-Control: max-age`, within these bounds. */
export const METADATA_CACHE_DEFAULT_S = 3_600;
const CACHE_MIN_S = 60;
const CACHE_MAX_S = 86_400;
const MAX_CLIENT_ID_LENGTH = 255; // the oauth_clients id column

export class ClientMetadataError extends Error {}

const documentSchema = z.looseObject({
  client_id: z.string(),
  redirect_uris: z.array(z.string().max(2000)).min(1).max(20),
  client_name: z.string().max(200).optional(),
  client_uri: z.string().max(2000).optional(),
  logo_uri: z.string().max(2000).optional(),
  token_endpoint_auth_method: z.string().optional(),
  grant_types: z.array(z.string()).optional(),
  response_types: z.array(z.string()).optional(),
  client_secret: z.unknown().optional(),
});

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Whether a `client_id` is a metadata document URL (an https URL; http on a loopback host only in tests). */
export function isMetadataDocumentId(clientId: string, allowPrivate: boolean): boolean {
  if (!URL.canParse(clientId)) return false;
  const u = new URL(clientId);
  return u.protocol === 'https:' || (allowPrivate && u.protocol === 'http:' && LOOPBACK.has(u.hostname));
}

/** The draft's rules for the URL itself: a path, no dot segments, no fragment, no credentials. */
function urlProblem(clientId: string): string | null {
  if (clientId.length > MAX_CLIENT_ID_LENGTH) return `is longer than ${MAX_CLIENT_ID_LENGTH} characters`;
  const u = new URL(clientId);
  if (u.hash || clientId.includes('#')) return 'must not have a fragment';
  if (u.username || u.password) return 'must not contain credentials';
  if (u.pathname === '/' || u.pathname === '') return 'must have a path';
  if (/(^|\/)\.\.?(\/|$)/.test(clientId.slice(u.origin.length))) return 'must not contain . or .. path segments';
  return null;
}

const agents = new Map<boolean, Agent>();
function agentFor(allowPrivate: boolean, resolve: Resolver): Agent {
  let agent = agents.get(allowPrivate);
  if (!agent) {
    agent = new Agent({ connect: { lookup: guardedLookup({ allowPrivate, resolve }), timeout: METADATA_TIMEOUT_MS } });
    agents.set(allowPrivate, agent);
  }
  return agent;
}

/**
 * A fetch a bound refused (per address, or the cap on clients waiting for a first sign-in): the authorization
 * endpoint answers it as a page with `Retry-After`.
 */
export class MetadataThrottled extends Error {
  constructor(
    message: string,
    readonly status: 429 | 503,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

/**
 * Per process: URLs whose document could not be used, with the reason, for FAILED_FOR_S, so a failing URL is not
 * fetched again at once (the oldest are dropped past FAILED_MAX). Documents that could be used are cached in their
 * oauth_clients row (`metadata_fresh_until`), for every process.
 */
const failed = new Map<string, { until: number; message: string }>();
const FAILED_FOR_S = 60;
const FAILED_MAX = 10_000;

function rememberFailure(clientId: string, message: string) {
  failed.delete(clientId);
  if (failed.size >= FAILED_MAX) failed.delete(failed.keys().next().value!);
  failed.set(clientId, { until: Date.now() + FAILED_FOR_S * 1000, message });
}

function maxAge(cacheControl: string | string[] | undefined): number {
  const value = Array.isArray(cacheControl) ? cacheControl.join(',') : (cacheControl ?? '');
  if (/no-store|no-cache/i.test(value)) return CACHE_MIN_S;
  const m = /max-age=(\d+)/i.exec(value);
  const seconds = m ? Number(m[1]) : METADATA_CACHE_DEFAULT_S;
  return Math.min(CACHE_MAX_S, Math.max(CACHE_MIN_S, seconds));
}

/** Fetches the document under the webhook address policy (public addresses only), bounded in time and size. */
async function fetchDocument(deps: Deps, clientId: string, allowPrivate: boolean) {
  try {
    await checkWebhookUrl(clientId, { allowPrivate, resolve: deps.resolve });
  } catch (err) {
    if (err instanceof UrlPolicyError) throw new ClientMetadataError(`The client_id URL ${err.message}.`);
    throw err;
  }
  let res;
  try {
    res = await request(clientId, {
      method: 'GET',
      headers: { accept: 'application/json', 'user-agent': 'offerkit-oauth/1.0' },
      dispatcher: agentFor(allowPrivate, deps.resolve),
      signal: AbortSignal.timeout(METADATA_TIMEOUT_MS),
      headersTimeout: METADATA_TIMEOUT_MS,
      bodyTimeout: METADATA_TIMEOUT_MS,
    });
  } catch (err) {
    const e = err as Error & { cause?: Error };
    throw new ClientMetadataError(
      `The client metadata document at ${clientId} could not be fetched (${e.cause?.message ?? e.message}).`,
    );
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > METADATA_MAX_BYTES)
        throw new ClientMetadataError(
          `The client metadata document at ${clientId} is larger than ${METADATA_MAX_BYTES} bytes.`,
        );
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    if (err instanceof ClientMetadataError) throw err;
    throw new ClientMetadataError(`The client metadata document at ${clientId} could not be read in time.`);
  } finally {
    res.body.destroy();
  }
  if (res.statusCode !== 200)
    throw new ClientMetadataError(`The client metadata document at ${clientId} answered HTTP ${res.statusCode}.`);
  let json: unknown;
  try {
    json = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new ClientMetadataError(`The client metadata document at ${clientId} is not JSON.`);
  }
  return { json, ttl: maxAge(res.headers['cache-control']) };
}

/**
 * Makes sure the client of a metadata document URL is known: fetched (and stored as an oauth_clients row whose
 * id is the URL) unless its row is still fresh. Throws ClientMetadataError with a reason the sign-in page shows, or
 * MetadataThrottled when a fetch would pass a bound: OAUTH_METADATA_FETCH_LIMIT per client address (only fetches
 * count: a fresh row or a remembered failure costs nothing) and, for a URL with no row yet,
 * OAUTH_METADATA_CLIENT_LIMIT clients made from documents that have not completed a sign-in.
 */
export async function loadMetadataClient(
  deps: Deps,
  em: EntityManager,
  clientId: string,
  checkRedirectUri: (uri: string) => string | null,
  ip: string,
): Promise<void> {
  const problem = urlProblem(clientId);
  if (problem) throw new ClientMetadataError(`The client_id URL ${problem}.`);
  const [row] = await sql<{ fresh: boolean | null }>(
    em,
    'select metadata_fresh_until > now() as fresh from oauth_clients where id = $1',
    [clientId],
  );
  if (row?.fresh) return;
  const miss = failed.get(clientId);
  if (miss && miss.until > Date.now()) throw new ClientMetadataError(miss.message);
  const c = deps.config;
  if (!row && c.OAUTH_METADATA_CLIENT_LIMIT > 0) {
    const [waiting] = await sql<{ n: number }>(
      em,
      `select count(*)::int as n from (select 1 from oauth_clients where signed_in_at is null and
         metadata_fresh_until is not null limit $1) w`,
      [c.OAUTH_METADATA_CLIENT_LIMIT],
    );
    if (waiting.n >= c.OAUTH_METADATA_CLIENT_LIMIT) {
      deps.logger.warn(
        { limit: c.OAUTH_METADATA_CLIENT_LIMIT },
        'OAuth: too many clients from metadata documents wait for a first sign-in; new ones are refused',
      );
      throw new MetadataThrottled(
        'Too many new clients are waiting for their first sign-in here. Try again later.',
        503,
        3600,
      );
    }
  }
  if (c.OAUTH_METADATA_FETCH_LIMIT > 0) {
    const r = await limitsFor(deps).consume(
      'metadata-fetch',
      ip,
      c.OAUTH_METADATA_FETCH_LIMIT,
      c.OAUTH_METADATA_FETCH_WINDOW_SECONDS,
    );
    if (!r.ok)
      throw new MetadataThrottled(
        `Too many client metadata documents were fetched for sign-ins from this address. Try again in ` +
          `${Math.ceil(r.retryAfterSeconds / 60)} minutes.`,
        429,
        r.retryAfterSeconds,
      );
  }
  try {
    await fetchAndStore(deps, em, clientId, checkRedirectUri);
  } catch (err) {
    if (err instanceof ClientMetadataError) rememberFailure(clientId, err.message);
    throw err;
  }
}

async function fetchAndStore(
  deps: Deps,
  em: EntityManager,
  clientId: string,
  checkRedirectUri: (uri: string) => string | null,
): Promise<void> {
  const allowPrivate = deps.config.WEBHOOKS_ALLOW_PRIVATE_URLS;
  const { json, ttl } = await fetchDocument(deps, clientId, allowPrivate);
  const parsed = documentSchema.safeParse(json);
  if (!parsed.success)
    throw new ClientMetadataError(
      `The client metadata document at ${clientId} is not valid (${parsed.error.issues[0].path.join('.') || 'body'}: ` +
        `${parsed.error.issues[0].message}).`,
    );
  const doc = parsed.data;
  if (doc.client_id !== clientId)
    throw new ClientMetadataError(`The client metadata document's client_id is not its own URL (${clientId}).`);
  if (doc.client_secret !== undefined || (doc.token_endpoint_auth_method ?? 'none') !== 'none')
    throw new ClientMetadataError(
      'A client identified by a metadata document is a public client here: token_endpoint_auth_method must be none.',
    );
  for (const uri of doc.redirect_uris) {
    const bad = checkRedirectUri(uri);
    if (bad) throw new ClientMetadataError(`The client metadata document has an unusable redirect URI: ${bad}.`);
  }
  const httpUrl = (v: string | undefined) => (v && URL.canParse(v) && /^https?:$/.test(new URL(v).protocol) ? v : null);
  await sql(
    em,
    `insert into oauth_clients (id, client_name, redirect_uris, token_endpoint_auth_method, client_uri, logo_uri,
       metadata_fresh_until) values ($1, $2, $3, 'none', $4, $5, now() + make_interval(secs => $6))
     on conflict (id) do update set client_name = excluded.client_name, redirect_uris = excluded.redirect_uris,
       client_uri = excluded.client_uri, logo_uri = excluded.logo_uri,
       metadata_fresh_until = excluded.metadata_fresh_until`,
    [
      clientId,
      doc.client_name ?? new URL(clientId).host,
      JSON.stringify(doc.redirect_uris),
      httpUrl(doc.client_uri),
      httpUrl(doc.logo_uri),
      ttl,
    ],
  );
}

/** Forgets the failures this process remembered (tests). */
export function clearMetadataCache() {
  failed.clear();
}
