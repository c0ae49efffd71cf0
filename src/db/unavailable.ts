// Telling "PostgreSQL is not there" apart from every other error, so the API can answer 503 and
// workers can wait instead of failing.

/** Node socket errors seen when the server is down, restarting or unreachable. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * SQLSTATE classes and codes that mean the server is unavailable rather than the statement wrong:
 * class 08 (connection exception), 57P01..57P03 (shutting down, crash recovery, cannot connect now),
 * 53300 (too many connections), 25P03 (the session waited too long inside a transaction and was ended).
 */
const SQLSTATE = /^(08...|57P0[1-3]|53300|25P03)$/;

const MESSAGES = new RegExp(
  [
    'Connection terminated',
    'connection timeout',
    'timeout exceeded when trying to connect',
    'the database system is (starting up|shutting down|in recovery mode)',
    'Client has encountered a connection error',
    'Connection refused',
    'terminating connection due to administrator command',
    'terminating connection due to idle-in-transaction timeout',
    // The bounds of src/db/bounds.ts: the server cancelled a statement at statement_timeout (57014, told apart
    // from a cancel asked for by its message), or the client gave up waiting (pool-guard.ts).
    'canceling statement due to statement timeout',
    'PostgreSQL did not answer within',
    'PostgreSQL stopped answering',
  ].join('|'),
  'i',
);

/** True when the error (or one of its causes) says the database could not be reached. */
export function isDatabaseUnavailable(err: unknown): boolean {
  let e = err as { code?: unknown; cause?: unknown; message?: unknown; name?: unknown; errors?: unknown } | undefined;
  for (let i = 0; e && typeof e === 'object' && i < 6; i++) {
    if (typeof e.code === 'string' && (NETWORK_CODES.has(e.code) || SQLSTATE.test(e.code))) return true;
    if (e.name === 'ConnectionException') return true;
    if (typeof e.message === 'string' && MESSAGES.test(e.message)) return true;
    // AggregateError (a connect to several addresses that all refused)
    if (Array.isArray(e.errors) && e.errors.some((x) => isDatabaseUnavailable(x))) return true;
    e = e.cause as typeof e;
  }
  return false;
}

/**
 * The server answered: it cancelled a statement at its `statement_timeout` (57014) or ended a session that idled
 * inside a transaction (25P03). A 503 all the same, but not an outage: PostgreSQL is there, and waiting for it to
 * "come back" would only run the same slow work again at once.
 */
export function isServerBound(err: unknown): boolean {
  let e = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined;
  for (let i = 0; e && typeof e === 'object' && i < 6; i++) {
    if (e.code === '57014' || e.code === '25P03') return true;
    if (typeof e.message === 'string' && /statement timeout|idle-in-transaction timeout/i.test(e.message)) return true;
    e = e.cause as typeof e;
  }
  return false;
}

/** Said of an outage after which a change may have been applied (`isOutcomeUnknown`). */
export const OUTCOME_UNKNOWN = 'the change may have been applied (outcome unknown)';

/** Marks `err` (its message) as leaving the outcome unknown; once. */
export function markOutcomeUnknown(err: unknown): void {
  if (err instanceof Error && !err.message.includes(OUTCOME_UNKNOWN))
    err.message = `${err.message}; ${OUTCOME_UNKNOWN}`;
}

/**
 * True when the database stopped answering after it had been sent a COMMIT or a statement that commits by itself
 * (pool-guard.ts): the change may or may not have been applied, so the caller must not be told it was not.
 */
export function isOutcomeUnknown(err: unknown): boolean {
  let e = err as { message?: unknown; cause?: unknown } | undefined;
  for (let i = 0; e && typeof e === 'object' && i < 6; i++) {
    if (typeof e.message === 'string' && e.message.includes(OUTCOME_UNKNOWN)) return true;
    e = e.cause as typeof e;
  }
  return false;
}

/**
 * The same outage without the doubt, for a statement whose effect the caller did not ask for (a rate-limit counter):
 * its answer must not say the request's change may have been applied when the request never reached it.
 */
export function withoutDoubt(err: unknown): unknown {
  if (!isOutcomeUnknown(err)) return err;
  return Object.assign(new Error('PostgreSQL did not answer within its bound (a rate-limit counter)'), {
    code: 'ETIMEDOUT',
  });
}
