import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';

/**
 * Asking the person before a destructive tool runs (MCP elicitation, `elicitation/create`), on a stateless server:
 * the `tools/call` of a client that declared the `elicitation` capability is answered as an event stream; the
 * question goes first on it, the client's answer arrives as a POST of its own (a JSON-RPC response carrying the
 * question's id), which is matched here to the waiting call, and then the call's result closes the stream. Waiting
 * calls live in this process: with several API instances, the answer must reach the same one (otherwise the wait
 * ends without an answer and nothing is done).
 */

/** How long the person has to answer; then nothing is done. */
export const ELICITATION_WAIT_MS = 5 * 60_000;

export type ElicitAnswer = { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, unknown> } | null;

interface Waiting {
  appId: string;
  connectionId: string | null;
  resolve: (answer: ElicitAnswer) => void;
}

const waiting = new Map<string, Waiting>();

/** A JSON-RPC message as one server-sent event. */
export const sseEvent = (message: unknown) => `event: message\ndata: ${JSON.stringify(message)}\n\n`;

/**
 * Sends the question on the stream and waits for the answer (null: none in time, or the stream closed). The
 * question's id is random, so an answer cannot be guessed or given for another call.
 */
export function ask(
  stream: PassThrough,
  who: { appId: string; connectionId: string | null },
  params: { message: string; requestedSchema: Record<string, unknown> },
  waitMs = ELICITATION_WAIT_MS,
): Promise<ElicitAnswer> {
  const id = `elicit_${randomBytes(16).toString('base64url')}`;
  return new Promise((resolve) => {
    const done = (answer: ElicitAnswer) => {
      clearTimeout(timer);
      stream.off('close', closed);
      waiting.delete(id);
      resolve(answer);
    };
    const closed = () => done(null);
    const timer = setTimeout(() => done(null), waitMs);
    stream.on('close', closed);
    waiting.set(id, { ...who, resolve: done });
    stream.write(sseEvent({ jsonrpc: '2.0', id, method: 'elicitation/create', params }));
  });
}

/**
 * Hands answers (JSON-RPC responses) to the calls waiting for them; true when every message of the POST was such an
 * answer, from the same app and connection as the question.
 */
export function deliverAnswers(
  messages: { id?: unknown; result?: unknown; error?: unknown; method?: unknown }[],
  who: { appId: string; connectionId: string | null },
): boolean {
  const mine = messages.map((m) => {
    const w = typeof m.id === 'string' && m.method === undefined ? waiting.get(m.id) : undefined;
    return w && w.appId === who.appId && w.connectionId === who.connectionId ? { m, w } : null;
  });
  if (mine.some((x) => x === null)) return false;
  for (const x of mine) {
    const r = x!.m.result as ElicitAnswer;
    x!.w.resolve(
      r && typeof r === 'object' && ['accept', 'decline', 'cancel'].includes(String(r.action))
        ? r
        : { action: 'cancel' },
    );
  }
  return true;
}
