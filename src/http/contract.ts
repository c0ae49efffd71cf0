import { Readable } from 'node:stream';
import type { Middleware } from 'koa';
import { z } from 'zod';
import type { ReplyDoc, RouteDef } from './route.js';
import { describeIssue } from './validate.js';

/** Every error body: `{ error, ...details }` (OAuth errors add `error_description`, a 402 its limit). */
export const errorSchema = z.looseObject({ error: z.string() });

/** One answer as the client gets it: status, content type and body (JSON as sent, or raw text or bytes). */
export interface Answer {
  status: number;
  contentType: string;
  body: unknown;
}

const isRaw = (body: unknown) => typeof body === 'string' || body instanceof Uint8Array;
const isEmpty = (body: unknown) =>
  body === null || body === undefined || body === '' || (body instanceof Uint8Array && body.length === 0);

/** What the route documents for a status: its replies, else its response schema at its success status. */
function documented(def: RouteDef, status: number): ReplyDoc | undefined {
  if (def.replies?.[status]) return def.replies[status];
  if (status === (def.status ?? 200) && def.response) return { description: 'OK', schema: def.response };
  return undefined;
}

/** The first key of `sent` that parsing dropped (an undocumented field), as a dotted path. */
function strayKey(sent: unknown, kept: unknown, path: string[]): string | null {
  if (Array.isArray(sent) && Array.isArray(kept)) {
    for (let i = 0; i < sent.length; i++) {
      const found = strayKey(sent[i], kept[i], [...path, String(i)]);
      if (found) return found;
    }
    return null;
  }
  if (sent && kept && typeof sent === 'object' && typeof kept === 'object') {
    for (const [k, v] of Object.entries(sent)) {
      if (!(k in kept)) return [...path, k].join('.');
      const found = strayKey(v, (kept as Record<string, unknown>)[k], [...path, k]);
      if (found) return found;
    }
  }
  return null;
}

function schemaProblem(status: number, schema: z.ZodType, body: unknown): string | null {
  // The client sees JSON: dates as strings, undefined fields gone.
  const wire: unknown = JSON.parse(JSON.stringify(body));
  const result = schema.safeParse(wire);
  if (!result.success) return `${status} ${describeIssue(result.error.issues[0], 'body')}`;
  const stray = strayKey(wire, result.data, []);
  return stray ? `${status} ${stray}: is not in the response schema` : null;
}

function typeMatches(doc: ReplyDoc, contentType: string): boolean {
  const types = typeof doc.contentType === 'string' ? [doc.contentType] : (doc.contentType ?? []);
  return types.some((t) => contentType.startsWith(t));
}

/**
 * Why an answer differs from what its route documents, or null when it matches: a JSON body is parsed with
 * the schema documented for its status (the response schema, a reply's schema, or the error schema for
 * 4xx and 5xx), with no field beyond it; a page or file needs a reply documenting its content type.
 */
export function contractProblem(def: RouteDef | undefined, answer: Answer): string | null {
  const { status, contentType } = answer;
  // The MCP endpoint sends a tool call's answer as JSON text it serialized itself: checked as the JSON it is.
  const body =
    def?.transport === 'mcp' && typeof answer.body === 'string' && contentType.startsWith('application/json')
      ? (JSON.parse(answer.body) as unknown)
      : answer.body;
  if (status === 204 || status === 304) return null;
  // An event stream (the MCP endpoint's answer to a call that asks the person first): JSON-RPC messages as events.
  if (body instanceof Readable) {
    // Or a route whose reply at this status documents the stream's content type (the change stream).
    const documented = [def?.replies?.[status]?.contentType ?? []].flat();
    return (def?.transport === 'mcp' && status === 200 && contentType === 'text/event-stream') ||
      documented.includes(contentType)
      ? null
      : `${status} streamed ${contentType || 'a body'} from a route that does not stream`;
  }
  const doc = def ? documented(def, status) : undefined;
  if (status >= 400) {
    if (isRaw(body) && doc && typeMatches(doc, contentType)) return null;
    if (isRaw(body)) return `${status} with a ${contentType || 'raw'} body instead of a JSON error`;
    return schemaProblem(status, doc?.schema ?? errorSchema, body);
  }
  if (!def) return `${status} from no route`;
  if (!doc) return `status ${status} is not documented`;
  if (isEmpty(body)) return doc.schema || doc.contentType ? `${status} has no body` : null;
  if (doc.contentType) {
    return isRaw(body) && typeMatches(doc, contentType)
      ? null
      : `${status} is documented as ${String(doc.contentType)}, got ${contentType || 'JSON'}`;
  }
  if (!doc.schema) return `${status} is documented without a body`;
  if (isRaw(body)) return `${status} is documented as JSON, got ${contentType || 'raw'}`;
  return schemaProblem(status, doc.schema, body);
}

export interface Violation {
  requestId: string;
  message: string;
}

const violations: Violation[] = [];

/** Checks one answer; a mismatch is kept for the tests to turn into a failure. */
export function checkAnswer(def: RouteDef | undefined, requestId: string, what: string, answer: Answer): void {
  const problem = contractProblem(def, answer);
  if (problem) violations.push({ requestId, message: `${what} answered outside its documented contract: ${problem}` });
}

/** The mismatches recorded (for one request, or all), removed from the record. */
export function takeViolations(requestId?: string): Violation[] {
  const taken = violations.filter((v) => requestId === undefined || v.requestId === requestId);
  for (const v of taken) violations.splice(violations.indexOf(v), 1);
  return taken;
}

/**
 * Checks every HTTP answer against its route's documents (the app uses it when NODE_ENV=test): outermost, so it
 * sees the bodies error handling and the router's 404 write too.
 */
export function contractCheck(): Middleware {
  return async (ctx, next) => {
    await next();
    if (ctx.method === 'HEAD' || ctx.method === 'OPTIONS') return;
    // Pages and JSON outside the public API (the console's own, people's sign-in) have no documents.
    if (ctx.state.outsideApi === true) return;
    const def = ctx.state.route as RouteDef | undefined;
    checkAnswer(def, String(ctx.state.requestId ?? ''), `${ctx.method} ${def?.path ?? ctx.path}`, {
      status: ctx.status,
      contentType: ctx.response.type,
      body: ctx.body,
    });
  };
}
