import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { deleteInBatches, sql } from '../db/sql.js';
import { isOutcomeUnknown, withoutDoubt } from '../db/unavailable.js';
import { AppError, badRequest, conflict } from '../errors.js';
import { Reply, type Caller, type IdempotencyKey, type RouteDef } from './route.js';

/**
 * `Idempotency-Key` on POST, with Stripe's semantics: a retry within 24 hours answers the first
 * response (status and body, with `Idempotent-Replayed: true`) without doing the work again; the same
 * key with another request is 422; a retry while the first still runs waits for it, then 409.
 *
 * Keys are scoped per app and credential (secret key, publishable key, an account's token, an OAuth
 * connection, the admin key) and stored compactly: 16 bytes of SHA-256 over (app, credential, key)
 * and 16 over the request. Routes that declare `idempotency: 'atomic'` (usage changes) write the key
 * in the statement that does the work, so a crash can neither lose the key nor apply twice; on every
 * other POST the key is claimed in a statement of its own first and its response recorded after.
 */
export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const IDEMPOTENCY_TTL_HOURS = 24;
/** How long a retry waits for the first request with its key before answering 409. */
export const IDEMPOTENCY_WAIT_MS = 10_000;
/**
 * A claim older than this with no recorded response belongs to a request that died mid-way (a crash
 * or a lost connection): its outcome is unknown, so the key answers 409 rather than run it again.
 */
export const IDEMPOTENCY_STALE_MS = 5 * 60_000;

export type { IdempotencyKey };

/** Thrown by an atomic route whose statement hit an existing key: the wrapper answers the stored response. */
export class IdempotentReplay extends Error {}

const hash16 = (parts: string[]) => createHash('sha256').update(parts.join('\u0000')).digest().subarray(0, 16);

function credentialScope(caller: Caller): string | null {
  switch (caller.kind) {
    case 'none':
      return null;
    case 'token':
      return `token:${caller.accountId}`;
    case 'oauth':
      return `oauth:${caller.connectionId}`;
    case 'person':
      return `person:${caller.userId}`;
    default:
      return caller.kind;
  }
}

/** The key of this request, or null when it has none or the route does not take one. Throws 400 on a bad key. */
export function idempotencyKeyOf(
  def: RouteDef,
  input: { params: unknown; query: unknown; body: unknown; caller: Caller; appId: string | null },
  headers: Record<string, string | undefined>,
): IdempotencyKey | null {
  const raw = headers[IDEMPOTENCY_HEADER];
  if (raw === undefined || def.method !== 'POST' || def.oauth || def.idempotency === false) return null;
  const scope = credentialScope(input.caller);
  // Without a credential there is nothing to scope the key to: ignored, as on the open routes.
  if (scope === null) return null;
  if (!/^[\x21-\x7e]{1,255}$/.test(raw)) throw badRequest('Idempotency-Key: must be 1 to 255 visible ASCII characters');
  return {
    appId: input.appId,
    digest: hash16([input.appId ?? '', scope, raw]),
    requestHash: hash16([
      def.method,
      def.path,
      JSON.stringify(input.params ?? {}),
      JSON.stringify(input.query ?? {}),
      JSON.stringify(input.body ?? {}),
    ]),
  };
}

interface KeyRow {
  request_hash: Buffer;
  status: number | null;
  body: unknown;
  age_ms: number;
}

const replayed = (status: number, body: unknown) => new Reply(status, body, { 'Idempotent-Replayed': 'true' });

const mismatch = () =>
  new AppError(
    422,
    'Idempotency-Key was already used with a different request (method, path or body); use a new key for a new request',
  );

async function readKey(em: EntityManager, key: IdempotencyKey): Promise<KeyRow | null> {
  const [row] = await sql<KeyRow>(
    em,
    `select request_hash, status, body, (extract(epoch from now() - created_at) * 1000)::float8 as age_ms
       from idempotency_keys where digest = $1 and created_at > now() - make_interval(hours => $2)`,
    [key.digest, IDEMPOTENCY_TTL_HOURS],
  );
  return row ?? null;
}

/**
 * The stored answer for a key (waiting while the first request runs), or null when the key is free.
 * 422 for another request under the key, 409 when the first is still running after the wait.
 */
async function storedAnswer(em: EntityManager, key: IdempotencyKey): Promise<Reply | null> {
  const deadline = Date.now() + IDEMPOTENCY_WAIT_MS;
  for (let delay = 20; ; delay = Math.min(delay * 2, 250)) {
    const row = await readKey(em, key);
    if (!row) return null;
    if (!Buffer.from(row.request_hash).equals(key.requestHash)) throw mismatch();
    if (row.status !== null) return replayed(row.status, row.body);
    if (row.age_ms > IDEMPOTENCY_STALE_MS)
      throw conflict(
        'The first request with this Idempotency-Key did not finish and its outcome is unknown; check the ' +
          'resource, then retry with a new key',
      );
    if (Date.now() > deadline)
      throw conflict('A request with this Idempotency-Key is still in progress; retry after it completes');
    await new Promise((r) => setTimeout(r, delay));
  }
}

/** Records a response for a key unless one is there; answers what is stored (the first response wins). */
async function recordOnce(em: EntityManager, key: IdempotencyKey, status: number, body: unknown) {
  const mine = await sql(
    em,
    `insert into idempotency_keys (digest, app_id, request_hash, status, body) values ($1, $2, $3, $4, $5)
     on conflict (digest) do nothing returning 1`,
    [key.digest, key.appId, key.requestHash, status, JSON.stringify(body)],
  );
  return mine.length ? null : await storedAnswer(em, key);
}

const errorBody = (err: AppError) => ({ error: err.message, ...err.extra });
/** Responses worth replaying: JSON answers below 500 (a 5xx frees the key, so a retry runs again). */
const replayable = (r: Reply) => r.status < 500 && r.contentType === undefined;

/** Runs a POST under its `Idempotency-Key` (see the module comment); without one, just runs it. */
export async function withIdempotency(
  em: EntityManager,
  def: RouteDef,
  key: IdempotencyKey | null,
  run: () => Promise<Reply>,
): Promise<Reply> {
  if (!key) return run();
  // The key's own statements are bookkeeping: an outage in one never leaves the change's outcome in doubt.
  const own = <T>(p: Promise<T>) => p.catch((err: unknown) => Promise.reject(withoutDoubt(err)));
  // An expired row (kept until the hourly purge) is no longer the key's: free it.
  await own(
    sql(em, 'delete from idempotency_keys where digest = $1 and created_at <= now() - make_interval(hours => $2)', [
      key.digest,
      IDEMPOTENCY_TTL_HOURS,
    ]),
  );

  if (def.idempotency === 'atomic') {
    const stored = await own(storedAnswer(em, key));
    if (stored) return stored;
    try {
      // The handler writes the key with its change (one statement) when it succeeds.
      return await run();
    } catch (err) {
      if (err instanceof IdempotentReplay) return (await own(storedAnswer(em, key))) ?? Promise.reject(err);
      if (err instanceof AppError && err.status < 500) {
        // Another request under the key may have won meanwhile: its answer is the key's. Not recorded (the database
        // is away): this answer stands, and a retry runs again, which is refused the same way.
        const stored = await recordOnce(em, key, err.status, errorBody(err)).catch(() => null);
        if (stored) return stored;
      }
      throw err;
    }
  }

  for (;;) {
    const claimed = await sql(
      em,
      `insert into idempotency_keys (digest, app_id, request_hash) values ($1, $2, $3)
       on conflict (digest) do nothing returning 1`,
      [key.digest, key.appId, key.requestHash],
    ).catch((err: unknown) => {
      // The claim may have been made, by a server that stopped answering: nothing ran, so free it once it answers.
      if (isOutcomeUnknown(err)) void eventually(() => release(em.fork(), key));
      return Promise.reject(withoutDoubt(err));
    });
    if (claimed.length === 0) {
      const stored = await own(storedAnswer(em, key));
      if (stored) return stored;
      continue; // freed meanwhile (the first failed with a 5xx): claim again
    }
    let reply: Reply;
    try {
      reply = await run();
    } catch (err) {
      if (err instanceof AppError && err.status < 500)
        await settle(em, (e) => complete(e, key, err.status, errorBody(err)));
      else if (isOutcomeUnknown(err)) {
        // A change whose commit went unanswered keeps the claim: freeing it would let a retry apply it twice. Once
        // the database answers again, the key's answer says what is known (a 409 every retry gets at once).
        void eventually(() => complete(em.fork(), key, 409, { error: OUTCOME_UNKNOWN_ANSWER }));
      } else await settle(em, (e) => release(e, key));
      throw err;
    }
    // The change is done: its answer goes to the caller even when the key cannot record it now.
    await settle(em, (e) => (replayable(reply) ? complete(e, key, reply.status, reply.body) : release(e, key)));
    return reply;
  }
}

/** How long a process keeps trying to settle a key in the background (past it, the claim goes stale). */
const SETTLE_FOR_MS = 60_000;

/**
 * Settles a key's row now, or, while the database does not answer, in the background (`eventually`): an outage in
 * the key's bookkeeping never replaces the request's own answer.
 */
async function settle(em: EntityManager, write: (em: EntityManager) => Promise<unknown>): Promise<void> {
  await write(em).catch(() => void eventually(() => write(em.fork())));
}

/** Runs `write` until it succeeds, once a second, for `SETTLE_FOR_MS` at most. */
async function eventually(write: () => Promise<unknown>): Promise<void> {
  const until = Date.now() + SETTLE_FOR_MS;
  while (Date.now() < until) {
    try {
      await write();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 1000).unref());
    }
  }
}

/** Records the answer of a key's claim (once: an answer already there stays). */
async function complete(em: EntityManager, key: IdempotencyKey, status: number, body: unknown) {
  await sql(em, 'update idempotency_keys set status = $2, body = $3 where digest = $1 and status is null', [
    key.digest,
    status,
    JSON.stringify(body ?? null),
  ]);
}

/**
 * The answer (409) of a key whose first request's commit went unanswered, recorded once the database answers again:
 * until then, or if this process dies first, a retry waits and is told the first is in progress, and a claim older
 * than `IDEMPOTENCY_STALE_MS` says the outcome is unknown.
 */
const OUTCOME_UNKNOWN_ANSWER =
  'The first request with this Idempotency-Key was committing when the database stopped answering, so whether it ' +
  'was applied is unknown; check the resource, then retry with a new key';

async function release(em: EntityManager, key: IdempotencyKey) {
  await sql(em, 'delete from idempotency_keys where digest = $1 and status is null', [key.digest]);
}

/** Hourly retention: keys older than 24 hours. */
export async function purgeIdempotencyKeys(em: EntityManager): Promise<number> {
  return deleteInBatches(
    em,
    `delete from idempotency_keys where digest in (select digest from idempotency_keys
       where created_at < now() - make_interval(hours => $1) limit $2) returning 1`,
    [IDEMPOTENCY_TTL_HOURS],
  );
}
