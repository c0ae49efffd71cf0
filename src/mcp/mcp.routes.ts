import { SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { AppError, forbidden } from '../errors.js';
import { cursorPageSchema } from '../http/pagination.js';
import { Reply, ctxOf, route, type RawBody, type Scope } from '../http/route.js';
import { deletedSchema } from '../http/schemas.js';
import { callSchema, callsQuery, flushCalls, listCalls, logCall } from './calls.js';
import {
  connectionSchema,
  deleteConnection,
  listConnections,
  recordKeyConnection,
  setConnectionGuardrails,
  touchConnection,
} from './connections.js';
import { ask, deliverAnswers, sseEvent } from './elicitation.js';
import { guardrailsInput, NO_GUARDRAILS } from './guardrails.js';
import { sql } from '../db/sql.js';
import { PassThrough } from 'node:stream';
import { answerPlainCall, dispatch, type McpRequestContext } from './server.js';
import {
  cachedSettings,
  getSettings,
  presentSettings,
  scopeOf,
  settingsPatch,
  settingsSchema,
  updateSettings,
} from './settings.js';
import { appCap, denial, toolsOf, type Tool } from './tools.js';
import { mcpResourceUrl, resourceKey } from '../oauth/oauth.service.js';

const tags = ['MCP'];

/** Where an MCP client finds how to sign in (RFC 9728), sent in the 401's `WWW-Authenticate`. */
export const resourceMetadataUrl = (origin: string, appId: string) =>
  `${origin}/.well-known/oauth-protected-resource/apps/${encodeURIComponent(appId)}/mcp`;

const messageId = z.union([z.string(), z.number().int()]);
/** A request (with `id`) or a notification; or a response a client sends back (`result` or `error`). */
const jsonRpcMessage = z.union([
  z.looseObject({
    jsonrpc: z.literal('2.0'),
    id: messageId.optional(),
    method: z.string().min(1),
    params: z.record(z.string(), z.unknown()).optional(),
  }),
  z.looseObject({ jsonrpc: z.literal('2.0'), id: messageId, result: z.record(z.string(), z.unknown()) }),
  z.looseObject({
    jsonrpc: z.literal('2.0'),
    id: messageId.nullable(),
    error: z.looseObject({ code: z.number().int(), message: z.string() }),
  }),
]);
const mcpBody = z.union([jsonRpcMessage, z.array(jsonRpcMessage).min(1)]);

const rpcId = z.union([z.string(), z.number(), z.null()]);
const rpcError = z.object({
  jsonrpc: z.literal('2.0'),
  id: rpcId,
  error: z.object({ code: z.number(), message: z.string(), data: z.unknown().optional() }),
});
const rpcResult = z.object({ jsonrpc: z.literal('2.0'), id: rpcId, result: z.record(z.string(), z.unknown()) });
const rpcResponse = z.union([rpcResult, rpcError]);
/** The answer to a request, or to a batch (one entry per request in it). */
const mcpAnswer = z.union([rpcResponse, z.array(rpcResponse)]);
/**
 * Every refusal of the endpoint is a JSON-RPC error (src/security/mcp-guard.ts, `mcpJsonRpcErrors`), as MCP clients
 * read it: -32700 for a body that is not JSON, -32600 for one that is not a message the server takes, -32000 for the
 * transport's and the app's refusals (the server turned off, a Host, Origin or Accept it does not take), -32603 for
 * a fault. Only the 401 keeps `{ error }` (the spec's Authentication section) with its `WWW-Authenticate`.
 */
const refused = (description: string) => ({ description, schema: rpcError });

type Message = { method?: string; params?: Record<string, unknown> };

const declaresElicitation = (initialize: Message) =>
  !!(initialize.params?.capabilities as { elicitation?: unknown } | undefined)?.elicitation;

async function handleMcp(
  s: Scope<{ appId: string }, Record<string, never>, z.output<typeof mcpBody>>,
): Promise<Reply<z.input<typeof mcpAnswer>> | Reply<RawBody>> {
  const { em, deps, app: appRecord, caller } = s;
  const app = appRecord!;
  const settings = await cachedSettings(em, deps.credentials, app.id);
  if (!settings.enabled) throw forbidden("This app's MCP server is turned off");

  // RFC 8707: an access token works only on the server URL it was issued for.
  if (caller.kind === 'oauth' && caller.audience !== null) {
    const here = resourceKey(mcpResourceUrl(s.origin, app.id));
    if (resourceKey(caller.audience) !== here)
      throw new AppError(401, 'Unauthorized', undefined, {
        'WWW-Authenticate':
          `Bearer resource_metadata="${resourceMetadataUrl(s.origin, app.id)}", error="invalid_token", ` +
          'error_description="The access token was issued for another resource"',
      });
  }

  const checked = transportChecks(s.body, s.headers['mcp-protocol-version']);
  if ('refused' in checked) return checked.refused;
  const parsed = checked.messages;
  const messages = parsed as Message[];
  const initialize = messages.find((m) => m.method === 'initialize');
  let connectionId: string | null = null;
  let newSession: string | null = null;
  let guardrails = settings.key_guardrails ?? NO_GUARDRAILS;
  let elicits = false;
  if (caller.kind === 'oauth') {
    const conn = await touchConnection(em, app.id, caller.connectionId, ['oauth']);
    connectionId = conn?.id ?? null;
    guardrails = conn?.guardrails ?? NO_GUARDRAILS;
    elicits = conn?.elicitation ?? false;
  } else if (initialize) {
    const clientInfo = (initialize.params?.clientInfo ?? {}) as { name?: unknown };
    newSession = await recordKeyConnection(
      em,
      app.id,
      caller.kind === 'admin' ? 'admin_key' : 'secret_key',
      typeof clientInfo.name === 'string' ? clientInfo.name : 'MCP client',
      declaresElicitation(initialize),
    );
    connectionId = newSession;
  } else if (s.headers['mcp-session-id']) {
    const session = await touchConnection(em, app.id, s.headers['mcp-session-id'], ['secret_key', 'admin_key']);
    connectionId = session?.id ?? null;
    elicits = session?.elicitation ?? false;
  }
  // Whether an OAuth connection's client can be asked (MCP elicitation) is what it declared at its last
  // `initialize` (a key session's is recorded with the session); the row is written only when that changes.
  if (initialize && caller.kind === 'oauth' && connectionId)
    await sql(em, 'update mcp_connections set elicitation = $2 where id = $1 and elicitation <> $2', [
      connectionId,
      declaresElicitation(initialize),
    ]);
  // The person's answer to a question a destructive call asked (a JSON-RPC response): handed to that call.
  const who = { appId: app.id, connectionId };
  if (messages.every((m) => m.method === undefined) && (await deliverAnswers(em, deps.orm, deps.logger, messages, who)))
    return new Reply(202, '');

  const context: McpRequestContext = {
    deps,
    app,
    requestId: s.requestId,
    origin: s.origin,
    settings,
    level: caller.kind === 'oauth' ? caller.level : null,
    connectionId,
    tools: toolsOf(s.routes),
    // An OAuth connection holds its own caps; key sessions share the app's (a token always names its connection).
    holder:
      caller.kind === 'oauth' ? { kind: 'connection' as const, id: caller.connectionId } : { kind: 'keys' as const },
    guardrails,
  };
  const sessionHeader: Record<string, string> = newSession ? { 'Mcp-Session-Id': newSession } : {};

  // A destructive tool called by a client that can be asked: the answer is an event stream that asks the person
  // first (`elicitation/create`), then carries the call's result, or says it was declined.
  const call = !Array.isArray(s.body) && messages[0].method === 'tools/call' ? messages[0] : null;
  const tool = call ? context.tools.find((t) => t.name === call.params?.name) : undefined;
  const args = (call?.params?.arguments ?? {}) as Record<string, unknown>;
  if (
    elicits &&
    tool?.annotations.destructiveHint === true &&
    args.dry_run !== true &&
    denial(tool, settings, context.level) === null &&
    // Arguments the call refuses are answered (400) without asking the person about a call that cannot run.
    tool.argumentError(args) === null
  ) {
    const stream = new PassThrough();
    void confirmThenCall(stream, context, tool, args, parsed, s, who).catch((err: unknown) => {
      deps.logger.error({ err, requestId: s.requestId }, 'MCP confirmation failed');
      stream.end();
    });
    return new Reply(200, stream, sessionHeader, 'text/event-stream');
  }
  // A plain `tools/call` is answered without the SDK, through the same `callTool` (denials, caps, dry_run, the call
  // log) as the SDK's handler, serialized once; everything else goes to the process's shared server (`dispatch`).
  const plain = await answerPlainCall(parsed, context);
  if (plain !== null) return new Reply(200, plain, sessionHeader, 'application/json');
  const answers = await dispatch(parsed, context);
  if (!answers.length) return new Reply(202, '', sessionHeader);
  return new Reply(200, (Array.isArray(s.body) ? answers : answers[0]) as z.input<typeof mcpAnswer>, sessionHeader);
}

/** The transport's refusal, as the SDK's streamable HTTP transport words it: a JSON-RPC error without an id. */
const refusal = (status: number, code: number, message: string) =>
  new Reply(status, { jsonrpc: '2.0' as const, error: { code, message }, id: null });

/** Batch limit of the SDK's streamable HTTP transport, kept. */
const MAX_BATCH = 100;

/**
 * The protocol version a request speaks: its `Mcp-Protocol-Version` header, which a client MUST send after
 * initialization from 2025-06-18 on; without it, 2025-03-26, as MCP's transport page tells a server to assume.
 */
export const requestProtocolVersion = (header: string | undefined) => header ?? '2025-03-26';

/** The first protocol version without JSON-RPC batches (2025-03-26 added them; 2025-06-18 removed them). */
export const BATCHES_REMOVED_IN = '2025-06-18';

/**
 * The checks the SDK's streamable HTTP transport makes on a POST before it hands the messages on, beside the route's
 * own schema (which took the body as JSON-RPC messages): the batch's size, `initialize` alone, and the
 * `Mcp-Protocol-Version` header after initialization. A batch is taken only in the protocol versions that had them
 * (2025-03-26, and 2024-11-05's JSON-RPC 2.0): from 2025-06-18 on it is an Invalid Request. A refusal, or the
 * messages.
 */
function transportChecks(
  body: z.output<typeof mcpBody>,
  version: string | undefined,
): { refused: Reply<z.input<typeof mcpAnswer>> } | { messages: JSONRPCMessage[] } {
  const messages = (Array.isArray(body) ? body : [body]) as JSONRPCMessage[];
  const speaks = requestProtocolVersion(version);
  if (Array.isArray(body) && SUPPORTED_PROTOCOL_VERSIONS.includes(speaks) && speaks >= BATCHES_REMOVED_IN)
    return {
      refused: refusal(
        400,
        -32600,
        `Invalid Request: JSON-RPC batches are not part of MCP protocol version ${speaks} (they were removed in ` +
          `${BATCHES_REMOVED_IN}); send one message per request`,
      ),
    };
  if (messages.length > MAX_BATCH)
    return { refused: refusal(400, -32600, `Invalid Request: Batch must not exceed ${MAX_BATCH} messages`) };
  if (messages.some((m) => 'method' in m && m.method === 'initialize')) {
    if (messages.length > 1)
      return { refused: refusal(400, -32600, 'Invalid Request: Only one initialization request is allowed') };
  } else if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
    return {
      refused: refusal(
        400,
        -32000,
        `Bad Request: Unsupported protocol version: ${version} (supported versions: ` +
          `${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
      ),
    };
  }
  return { messages };
}

/**
 * Asks the person to confirm a destructive call, then answers on the stream: the call's result when they accept
 * (and tick "confirm"); a tool error saying nothing was done when they decline, cancel or do not answer in time.
 */
async function confirmThenCall(
  stream: PassThrough,
  context: McpRequestContext,
  tool: Tool,
  args: Record<string, unknown>,
  messages: JSONRPCMessage[],
  s: Scope<{ appId: string }, Record<string, never>, z.output<typeof mcpBody>>,
  who: { appId: string; connectionId: string | null },
) {
  const shown = Object.entries(args)
    .map(([k, v]) => `${k} ${JSON.stringify(v)}`)
    .join(', ');
  const answer = await ask(context.deps.orm, context.deps.logger, stream, who, {
    message:
      `An assistant wants to run ${tool.name} (${tool.route.summary ?? tool.title})` +
      `${shown ? ` with ${shown}` : ''} in app ${context.app.name}. This cannot be undone. Allow it?`,
    requestedSchema: {
      type: 'object',
      properties: {
        confirm: { type: 'boolean', title: `Run ${tool.name}`, description: 'Tick to allow this change.' },
      },
      required: ['confirm'],
    },
  });
  const id = (s.body as { id?: string | number }).id ?? null;
  if (answer?.action === 'accept' && answer.content?.confirm === true) {
    // The call itself, as any other (`dispatch`: the same denials, caps, dry_run and call log).
    const [answer] = await dispatch(messages, context);
    stream.end(answer ? sseEvent(answer) : '');
    return;
  }
  const why =
    answer === null
      ? 'no answer came in time'
      : answer.action === 'accept'
        ? 'the person did not tick confirm'
        : `the person chose ${answer.action}`;
  const text = `Not done: ${tool.name} needs the person's confirmation and ${why}. Nothing was changed.`;
  logCall(context.deps.orm, context.deps.logger, {
    appId: context.app.id,
    connectionId: context.connectionId,
    tool: tool.name,
    args,
    status: 403,
    isError: true,
    result: text,
    durationMs: 0,
  });
  // Structured as every tool error is (`{ error, status }`, matching the tool's output schema), with the reason.
  const structuredContent = { error: text, status: 403, reason: 'not_confirmed' };
  stream.end(
    sseEvent({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }], structuredContent, isError: true } }),
  );
}

export const mcpRoutes = [
  route({
    method: 'POST',
    path: '/apps/:appId/mcp',
    transport: 'mcp',
    consoleHidden: true,
    writes: false,
    // One HTTP request carries JSON-RPC messages with their own ids: the HTTP `Idempotency-Key` is ignored here
    // (a replayed answer would carry another request's JSON-RPC id, and refusals must stay JSON-RPC errors).
    idempotency: false,
    sdk: 'mcp.post',
    auth: ['S', 'O'],
    tags,
    summary: 'MCP server (streamable HTTP, stateless, JSON responses)',
    description:
      'One JSON-RPC message per request; a batch only under protocol versions 2025-03-26 and 2024-11-05 (the ' +
      '`Mcp-Protocol-Version` header, 2025-03-26 when it is absent): from 2025-06-18 on a batch is refused with ' +
      '-32600. Notifications get an empty 202. Protocol versions 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05. ' +
      'With a key, `initialize` records a connection and answers an `Mcp-Session-Id` header; send it back so calls ' +
      'are logged under it. ' +
      'A 401 carries `WWW-Authenticate: Bearer resource_metadata="..."` for OAuth sign-in; every other refusal is a ' +
      'JSON-RPC error (-32700 not JSON, -32600 not a message the server takes, -32000 with 403 while the server is ' +
      'turned off). A destructive tool called by a client that declared elicitation is answered as an event stream: ' +
      '`elicitation/create` first, then the result once the person confirms (their answer is POSTed here).',
    params: appIdParams,
    body: mcpBody,
    response: mcpAnswer,
    replies: {
      202: { description: 'Notifications and responses only: accepted, no body' },
      400: refused(
        'Not JSON (-32700), or not a JSON-RPC message the server takes (-32600: not a message, `initialize` beside ' +
          'another message, a batch under protocol version 2025-06-18 or later, an unsupported version)',
      ),
      403: refused("The app's MCP server is turned off, or a Host or Origin that may not call it (-32000)"),
      404: refused('The app does not exist (-32000)'),
      406: refused('The Accept header does not take application/json (-32000)'),
      413: refused('Request body too large (-32000)'),
      415: refused('Not JSON: Content-Type must be application/json (-32000)'),
      500: refused('A fault of the service (-32603)'),
      503: refused('The database cannot be reached; retry after `Retry-After` seconds (-32000)'),
      429: {
        description:
          'Throttled (the per-connection request rate): a JSON-RPC error per request with `data.retry_after` ' +
          'seconds, and `Retry-After`',
        schema: z.union([rpcError, z.array(rpcError)]),
      },
    },
    // RFC 6750: a credential that was sent but is not good here (wrong, expired, revoked, or not
    // accepted by this server) adds error="invalid_token", so clients refresh or sign in again. `scope` is the
    // most the app's MCP server gives an OAuth connection (its cap), so a client asks for that, not every scope.
    challenge: async (origin, params, sent, { em, routes }) => {
      const cap = appCap(toolsOf(routes), await getSettings(em, params.appId));
      return (
        `Bearer resource_metadata="${resourceMetadataUrl(origin, params.appId)}", scope="${scopeOf(cap)}"` +
        (sent ? ', error="invalid_token"' : '')
      );
    },
    handler: handleMcp,
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/mcp/settings',
    sdk: 'mcp.getSettings',
    auth: ['A'],
    tags,
    summary: 'MCP settings',
    params: appIdParams,
    response: settingsSchema,
    handler: async (s) => presentSettings(s.em, ctxOf(s).app.id, await getSettings(s.em, ctxOf(s).app.id)),
  }),
  route({
    method: 'PATCH',
    path: '/apps/:appId/mcp/settings',
    sdk: 'mcp.updateSettings',
    auth: ['A'],
    tags,
    summary: 'Change MCP settings',
    description:
      '`enabled` and `access_level` merge; `tool_overrides` replaces the old map (tool name to on/off; unknown ' +
      "tool names are a 400). `key_guardrails` sets the caps of the app's key-based MCP use (secret and admin key " +
      'sessions together): `spend_cap` `{ amount, currency, period: day|month }` or null, and `usage_caps` ' +
      '`[{ entitlement_id, amount, period }]` (replacing the list); an omitted field keeps its value.',
    params: appIdParams,
    body: settingsPatch,
    response: settingsSchema,
    handler: async (s) =>
      presentSettings(
        s.em,
        ctxOf(s).app.id,
        await updateSettings(s.em, ctxOf(s).app.id, s.body, new Set(toolsOf(s.routes).map((t) => t.name)), (change) =>
          s.deps.credentials.confirm(change),
        ),
      ),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/mcp/connections',
    sdk: 'mcp.listConnections',
    auth: ['A'],
    tags,
    summary: 'MCP connections, most recently used first, with calls in the last 7 days',
    params: appIdParams,
    response: z.array(connectionSchema),
    handler: async (s) => {
      // Its call counts include the calls still queued for the log.
      await flushCalls(s.deps.orm);
      return listConnections(
        s.em,
        ctxOf(s).app.id,
        appCap(toolsOf(s.routes), await getSettings(s.em, ctxOf(s).app.id)),
      );
    },
  }),
  route({
    method: 'PATCH',
    path: '/apps/:appId/mcp/connections/:connectionId',
    sdk: 'mcp.updateConnection',
    auth: ['A'],
    tags,
    summary: "Set an OAuth connection's guard-rails",
    description:
      '`guardrails.spend_cap` `{ amount, currency, period: day|month }` (or null: no cap) bounds the money the ' +
      "connection's tools start in checkouts and plan changes per period; `guardrails.usage_caps` " +
      '`[{ entitlement_id, amount, period }]` (replacing the list) bounds the usage they record per entitlement. ' +
      "A field left out keeps its value. Key sessions share the app's `key_guardrails` (400 here).",
    params: appIdParams.extend({ connectionId: z.string().min(1).max(255) }),
    body: z.object({ guardrails: guardrailsInput }),
    response: connectionSchema,
    handler: async (s) =>
      setConnectionGuardrails(
        s.em,
        ctxOf(s).app.id,
        s.params.connectionId,
        s.body.guardrails,
        appCap(toolsOf(s.routes), await getSettings(s.em, ctxOf(s).app.id)),
      ),
  }),
  route({
    method: 'DELETE',
    path: '/apps/:appId/mcp/connections/:connectionId',
    sdk: 'mcp.deleteConnection',
    auth: ['A'],
    tags,
    summary: 'Remove a connection',
    description: 'An OAuth connection loses access on its next call; its refresh token stops working.',
    params: appIdParams.extend({ connectionId: z.string().min(1).max(255) }),
    response: deletedSchema,
    handler: (s) => deleteConnection(s.em, ctxOf(s).app.id, s.params.connectionId),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/mcp/calls',
    sdk: 'mcp.listCalls',
    auth: ['A'],
    tags,
    summary: 'MCP tool call log (30 days), newest first',
    description:
      'Results over 20,000 characters are cut (`truncated: true`). `limit` default 50, at most 100. Pass ' +
      '`next_cursor` back as `cursor` for the next page (null on the last).',
    params: appIdParams,
    query: callsQuery,
    response: cursorPageSchema(callSchema),
    handler: async (s) => {
      await flushCalls(s.deps.orm);
      return listCalls(s.em, ctxOf(s).app.id, s.query);
    },
  }),
];
