import type { EntityManager } from '@mikro-orm/postgresql';
import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { lazyFork } from '../db/lazy-em.js';
import type { Orm } from '../db/orm.js';
import { deleteInBatches, sql } from '../db/sql.js';
import type { Logger } from '../logger.js';

/**
 * Asking the person before a destructive tool runs (MCP elicitation, `elicitation/create`), on a stateless server
 * with any number of API processes behind a load balancer.
 *
 * The `tools/call` of a client that declared the `elicitation` capability is answered as an event stream; the
 * question goes first on it. The client's answer is not on that stream: streamable HTTP has the client POST it as a
 * JSON-RPC response of its own (a new HTTP request, which a load balancer may send to another process), while the
 * call's result must close the stream the first process holds. So the question is a row of `mcp_elicitations`
 * (pending, with its expiry), shared by every process:
 *
 * - the answer, wherever it lands, moves its row from pending to answered in one statement (only for the app and
 *   connection that were asked, only before it expires; a second answer finds nothing pending);
 * - the process holding the stream takes the answer in one statement (answered to taken, consume-once), checking
 *   its waiting questions together every POLL_MS while it has any, and at once when the answer landed on it;
 * - a question not answered in time (its `expires_at`, the database's clock) or whose stream closed is marked
 *   expired, so a late answer is never used. Nothing is done without an answer.
 */

/** How long the person has to answer; then nothing is done. */
export const ELICITATION_WAIT_MS = 5 * 60_000;
/** How often a process looks for the answers to the questions it is waiting on (only while it waits on any). */
export const POLL_MS = 200;

export type ElicitAnswer = { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, unknown> } | null;

interface Waiter {
  finish: (answer: ElicitAnswer) => void;
}

/** The questions this process holds a stream for, per database (tests run several API instances in one process). */
interface Waiting {
  waiters: Map<string, Waiter>;
  timer: NodeJS.Timeout | null;
  polling: Promise<void> | null;
  again: boolean;
}
const waitingOf = new WeakMap<Orm, Waiting>();

const ID_PREFIX = 'elicit_';

/** A JSON-RPC message as one server-sent event. */
export const sseEvent = (message: unknown) => `event: message\ndata: ${JSON.stringify(message)}\n\n`;

/** A client's result as an answer: an action we know, else cancel (an error answer, or nonsense, is a no). */
function answerOf(result: unknown): NonNullable<ElicitAnswer> {
  const r = result as ElicitAnswer;
  if (!r || typeof r !== 'object' || !['accept', 'decline', 'cancel'].includes(String(r.action)))
    return { action: 'cancel' };
  const content = r.content && typeof r.content === 'object' && !Array.isArray(r.content) ? r.content : undefined;
  return { action: r.action, ...(content ? { content } : {}) };
}

/**
 * Sends the question on the stream and waits for the answer (null: none in time, or the stream closed). The
 * question's id is random, so an answer cannot be guessed or given for another call.
 */
export async function ask(
  orm: Orm,
  logger: Logger,
  stream: PassThrough,
  who: { appId: string; connectionId: string | null },
  params: { message: string; requestedSchema: Record<string, unknown> },
  waitMs = ELICITATION_WAIT_MS,
): Promise<ElicitAnswer> {
  const id = `${ID_PREFIX}${randomBytes(16).toString('base64url')}`;
  await sql(
    lazyFork(orm.em),
    `insert into mcp_elicitations (id, app_id, connection_id, expires_at)
     values ($1, $2, $3, now() + make_interval(secs => $4::double precision / 1000))`,
    [id, who.appId, who.connectionId, waitMs],
  );
  let waiting = waitingOf.get(orm);
  if (!waiting) waitingOf.set(orm, (waiting = { waiters: new Map(), timer: null, polling: null, again: false }));
  const w = waiting;
  return new Promise((resolve) => {
    let done = false;
    const finish = (answer: ElicitAnswer) => {
      if (done) return;
      done = true;
      clearTimeout(backstop);
      stream.off('close', closed);
      w.waiters.delete(id);
      if (!w.waiters.size && w.timer) {
        clearInterval(w.timer);
        w.timer = null;
      }
      // No answer to act on: the question is closed, so an answer arriving later is refused, not kept.
      if (answer === null)
        void sql(
          lazyFork(orm.em),
          `update mcp_elicitations set status = 'expired' where id = $1 and status in ('pending', 'answered')`,
          [id],
        ).catch((err: unknown) => logger.warn({ err, id }, 'MCP elicitation: could not close a question'));
      resolve(answer);
    };
    const closed = () => finish(null);
    // The database's expiry ends the wait (`poll`); this is the bound should the database not answer.
    const backstop = setTimeout(() => finish(null), waitMs + 10 * POLL_MS);
    stream.on('close', closed);
    w.waiters.set(id, { finish });
    w.timer ??= setInterval(() => poll(orm, logger), POLL_MS);
    stream.write(sseEvent({ jsonrpc: '2.0', id, method: 'elicitation/create', params }));
  });
}

/**
 * Takes the answers to this process's waiting questions (answered to taken: each answer is used once, by the
 * process holding its stream) and closes those past their expiry. One statement for all of them.
 */
function poll(orm: Orm, logger: Logger): void {
  const w = waitingOf.get(orm);
  if (!w?.waiters.size) return;
  if (w.polling) {
    w.again = true;
    return;
  }
  w.polling = (async () => {
    do {
      w.again = false;
      const ids = [...w.waiters.keys()];
      if (!ids.length) break;
      try {
        const rows = await sql<{ id: string; status: string; answer: unknown }>(
          lazyFork(orm.em),
          `update mcp_elicitations set status = case when status = 'answered' then 'taken' else 'expired' end
            where id = any($1::text[]) and (status = 'answered' or (status = 'pending' and expires_at <= now()))
            returning id, status, answer`,
          [ids],
        );
        for (const r of rows) w.waiters.get(r.id)?.finish(r.status === 'taken' ? answerOf(r.answer) : null);
      } catch (err) {
        logger.warn({ err }, 'MCP elicitation: could not look for answers; trying again');
      }
    } while (w.again);
  })().finally(() => (w.polling = null));
}

/**
 * Records answers (JSON-RPC responses) to questions asked of this app and connection, on whichever process asked
 * them; true when every message of the POST was the answer to such a question still pending (then the POST is
 * answered 202 and nothing else is done with it).
 */
export async function deliverAnswers(
  em: EntityManager,
  orm: Orm,
  logger: Logger,
  messages: { id?: unknown; result?: unknown; error?: unknown; method?: unknown }[],
  who: { appId: string; connectionId: string | null },
): Promise<boolean> {
  const answers = new Map<string, NonNullable<ElicitAnswer>>();
  for (const m of messages) {
    if (typeof m.id !== 'string' || !m.id.startsWith(ID_PREFIX) || m.method !== undefined) return false;
    answers.set(m.id, answerOf(m.result));
  }
  if (answers.size !== messages.length) return false;
  const rows = await sql<{ id: string }>(
    em,
    `update mcp_elicitations e set status = 'answered', answer = u.answer, answered_at = now()
      from unnest($1::text[], $2::jsonb[]) as u(id, answer)
      where e.id = u.id and e.app_id = $3 and e.connection_id is not distinct from $4 and e.status = 'pending'
        and e.expires_at > now()
      returning e.id`,
    [[...answers.keys()], [...answers.values()].map((a) => JSON.stringify(a)), who.appId, who.connectionId],
  );
  // The process that asked takes it at its next look; if that is this one, now.
  if (rows.some((r) => waitingOf.get(orm)?.waiters.has(r.id))) poll(orm, logger);
  return rows.length === messages.length;
}

/** Deletes questions closed or expired a day ago and more, in batches (run by the hourly retention workflow). */
export function purgeOldElicitations(em: EntityManager): Promise<number> {
  return deleteInBatches(
    em,
    `delete from mcp_elicitations where id in (select id from mcp_elicitations
      where expires_at < now() - interval '1 day' limit $1) returning 1`,
    [],
  );
}
