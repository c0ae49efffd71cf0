import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { PassThrough } from 'node:stream';
import {
  CLIENT_CAPABILITIES_META_KEY,
  createRequestStateCodec,
  inputRequired,
  inputResponse,
  ProtocolError,
  ProtocolErrorCode,
  type CallToolResult,
  type JSONRPCMessage,
  type RequestStateCodec,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { lazyFork } from '../db/lazy-em.js';
import { sql } from '../db/sql.js';
import { logCall } from './calls.js';
import { ask, ELICITATION_WAIT_MS, sseEvent, type ElicitAnswer } from './elicitation.js';
import { dispatch } from './legacy.js';
import type { McpRequestContext } from './run-tool.js';
import { denial, type Tool } from './tools.js';

/**
 * Asking the person before a destructive tool runs, in both protocol eras. A call is asked about when its tool has
 * `destructiveHint: true`, it is no dry run, the caller may call the tool, its arguments are ones the tool takes,
 * and the client declared elicitation: at its `initialize` (2025 versions; the question goes out on the call's event
 * stream, src/mcp/elicitation.ts) or in the request's `_meta` (2026-07-28; the answer is an `input_required` result,
 * the client asks the person and sends the call again with the answer and the signed `requestState`). Either way the
 * question is a row of `mcp_elicitations`, consumed once by whichever process gets the answer, and nothing is done
 * without an answer in 5 minutes.
 */

/** The tool a call would ask the person about, or null. */
export function asksFirst(
  name: string,
  args: Record<string, unknown>,
  ctx: McpRequestContext,
  elicits: boolean,
): Tool | null {
  if (!elicits) return null;
  const tool = ctx.tools.find((t) => t.name === name);
  return tool?.annotations.destructiveHint === true &&
    args.dry_run !== true &&
    denial(tool, ctx.settings, ctx.level) === null &&
    // Arguments the call refuses are answered (400) without asking the person about a call that cannot run.
    tool.argumentError(args) === null
    ? tool
    : null;
}

/** The question: which tool, with which arguments, in which app; one box to tick. */
function question(tool: Tool, args: Record<string, unknown>, ctx: McpRequestContext) {
  const shown = Object.entries(args)
    .map(([k, v]) => `${k} ${JSON.stringify(v)}`)
    .join(', ');
  return {
    message:
      `An assistant wants to run ${tool.name} (${tool.route.summary ?? tool.title})` +
      `${shown ? ` with ${shown}` : ''} in app ${ctx.app.name}. This cannot be undone. Allow it?`,
    requestedSchema: {
      type: 'object' as const,
      properties: {
        confirm: { type: 'boolean' as const, title: `Run ${tool.name}`, description: 'Tick to allow this change.' },
      },
      required: ['confirm'],
    },
  };
}

/** Why the call was not made, from the person's answer (null: none came in time). */
const whyNot = (answer: ElicitAnswer) =>
  answer === null
    ? 'no answer came in time'
    : answer.action === 'accept'
      ? 'the person did not tick confirm'
      : `the person chose ${answer.action}`;

const confirmed = (answer: ElicitAnswer) => answer?.action === 'accept' && answer.content?.confirm === true;

/**
 * The tool error of a call the person did not allow, logged as any call: structured as every tool error is
 * (`{ error, status }`, matching the tool's output schema), with the reason.
 */
function notConfirmed(tool: Tool, args: Record<string, unknown>, why: string, ctx: McpRequestContext): CallToolResult {
  const text = `Not done: ${tool.name} needs the person's confirmation and ${why}. Nothing was changed.`;
  logCall(ctx.deps.orm, ctx.deps.logger, {
    appId: ctx.app.id,
    connectionId: ctx.connectionId,
    tool: tool.name,
    args,
    status: 403,
    isError: true,
    result: text,
    durationMs: 0,
  });
  return {
    content: [{ type: 'text', text }],
    structuredContent: { error: text, status: 403, reason: 'not_confirmed' },
    isError: true,
  };
}

/**
 * 2025 versions: asks on the stream, then answers on it: the call's result when the person accepts (and ticks
 * "confirm"); a tool error saying nothing was done when they decline, cancel or do not answer in time.
 */
export async function confirmThenCall(
  stream: PassThrough,
  ctx: McpRequestContext,
  tool: Tool,
  args: Record<string, unknown>,
  messages: JSONRPCMessage[],
  id: string | number | null,
) {
  const who = { appId: ctx.app.id, connectionId: ctx.connectionId };
  const answer = await ask(ctx.deps.orm, ctx.deps.logger, stream, who, question(tool, args, ctx));
  if (confirmed(answer)) {
    // The call itself, as any other (`dispatch`: the same denials, caps, dry_run and call log).
    const [result] = await dispatch(messages, ctx);
    stream.end(result ? sseEvent(result) : '');
    return;
  }
  stream.end(sseEvent({ jsonrpc: '2.0', id, result: notConfirmed(tool, args, whyNot(answer), ctx) }));
}

/** What a 2026-07-28 question's `requestState` carries: the question's row, and the call it is about. */
interface ConfirmState {
  question: string;
  tool: string;
  args: string;
}

const argsDigest = (args: Record<string, unknown>) =>
  createHash('sha256').update(JSON.stringify(args)).digest('base64url');

const codecs = new Map<string, { secret: string; codec: RequestStateCodec<ConfirmState> }>();

/**
 * The request-state codec of an app: HMAC-SHA256 under a key derived from the app's secret key, which every API
 * process has, so the answer may come back to any of them (and a regenerated key voids pending questions). The
 * state is bound to the caller (the OAuth connection, or the app's key sessions).
 */
export function stateCodec(ctx: McpRequestContext): RequestStateCodec<ConfirmState> {
  const known = codecs.get(ctx.app.id);
  if (known?.secret === ctx.app.apiKey) return known.codec;
  const codec = createRequestStateCodec<ConfirmState>({
    key: createHmac('sha256', ctx.app.apiKey).update('offerkit MCP requestState').digest(),
    ttlSeconds: ELICITATION_WAIT_MS / 1000,
    bind: () => `${ctx.app.id}\u0000${ctx.holder.kind === 'connection' ? ctx.holder.id : 'keys'}`,
  });
  codecs.delete(ctx.app.id);
  codecs.set(ctx.app.id, { secret: ctx.app.apiKey, codec });
  while (codecs.size > 1000) codecs.delete(codecs.keys().next().value!);
  return codec;
}

/**
 * 2026-07-28: before a `tools/call` runs, the `input_required` result that asks the person (a new call), the tool
 * error of a call they did not allow (a call sent again with their answer), or null to make the call (they allowed
 * it, or the call is not one to ask about). The question's row is taken once, so an answer cannot be replayed.
 */
export async function beforeModernCall(
  name: string,
  args: Record<string, unknown>,
  ctx: McpRequestContext,
  handler: ServerContext,
): Promise<Record<string, unknown> | null> {
  const envelope = handler.mcpReq.envelope as Record<string, unknown> | undefined;
  const declared = envelope?.[CLIENT_CAPABILITIES_META_KEY] as { elicitation?: unknown } | undefined;
  const tool = asksFirst(name, args, ctx, !!declared?.elicitation);
  if (!tool) return null;
  const codec = stateCodec(ctx);
  const state = handler.mcpReq.requestState<ConfirmState>();
  if (state === undefined) {
    const id = `confirm_${randomBytes(16).toString('base64url')}`;
    await sql(
      lazyFork(ctx.deps.orm.em),
      `insert into mcp_elicitations (id, app_id, connection_id, expires_at)
       values ($1, $2, $3, now() + make_interval(secs => $4::double precision / 1000))`,
      [id, ctx.app.id, ctx.connectionId, ELICITATION_WAIT_MS],
    );
    return inputRequired({
      inputRequests: { confirm: inputRequired.elicit(question(tool, args, ctx)) },
      requestState: await codec.mint({ question: id, tool: name, args: argsDigest(args) }, handler),
    }) as unknown as Record<string, unknown>;
  }
  if (state.tool !== name || state.args !== argsDigest(args))
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      'Invalid requestState: it was issued for another tool call; send the call again without it',
    );
  const view = inputResponse(handler.mcpReq.inputResponses, 'confirm');
  const answer: ElicitAnswer =
    view.kind === 'elicit'
      ? { action: view.action, ...(view.content ? { content: view.content as Record<string, unknown> } : {}) }
      : null;
  const [taken] = await sql<{ id: string }>(
    lazyFork(ctx.deps.orm.em),
    `update mcp_elicitations set status = 'taken', answer = $4, answered_at = now()
      where id = $1 and app_id = $2 and connection_id is not distinct from $3 and status = 'pending'
        and expires_at > now()
      returning id`,
    [state.question, ctx.app.id, ctx.connectionId, JSON.stringify(answer ?? { action: 'cancel' })],
  );
  if (!taken) return notConfirmed(tool, args, 'this answer was already used or came too late', ctx);
  return confirmed(answer) ? null : notConfirmed(tool, args, whyNot(answer), ctx);
}
