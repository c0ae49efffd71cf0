import {
  CLIENT_INFO_META_KEY,
  classifyInboundRequest,
  PROTOCOL_VERSION_META_KEY,
  type JSONRPCMessage,
} from '@modelcontextprotocol/server';
import { PassThrough } from 'node:stream';
import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { sql } from '../db/sql.js';
import { AppError, badRequest, forbidden } from '../errors.js';
import { cursorPageSchema } from '../http/pagination.js';
import { Reply, ctxOf, route, type RawBody, type Scope } from '../http/route.js';
import { deletedSchema } from '../http/schemas.js';
import { mcpResourceUrl, resourceKey } from '../oauth/oauth.service.js';
import { callSchema, callsQuery, flushCalls, listCalls } from './calls.js';
import { asksFirst, confirmThenCall } from './confirm.js';
import { CALL_TOOL, proxied } from './discovery.js';
import {
  connectionSchema,
  connectionState,
  deleteConnection,
  keySession,
  listConnections,
  markUsed,
  recordKeyConnection,
  setConnection,
} from './connections.js';
import { deliverAnswers } from './elicitation.js';
import { guardrailsInput, NO_GUARDRAILS } from './guardrails.js';
import { answerPlainCall, dispatch, headerMismatch, transportChecks, type Refusal } from './legacy.js';
import { serveModern } from './modern.js';
import type { McpRequestContext } from './run-tool.js';
import {
  cachedSettings,
  getSettings,
  presentSettings,
  scopeOf,
  settingsPatch,
  settingsSchema,
  updateSettings,
  type McpSettingsView,
} from './settings.js';
import { appCap, toolsOf } from './tools.js';
import { requestedToolsets, TOOLSETS, toolsetsSchema, type ToolsetChoice } from './toolsets.js';

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

type Message = {
  method?: string;
  id?: string | number;
  params?: Record<string, unknown> & { _meta?: Record<string, unknown> };
};
/** The protocol revision of the stateless core (src/mcp/modern.ts). */
const MODERN = '2026-07-28';
/** The request's choice of toolsets for `tools/list` (src/mcp/toolsets.ts); the `X-MCP-Toolsets` header says the same. */
const mcpQuery = z.object({
  toolsets: z
    .string()
    .max(200)
    .optional()
    .describe(
      `Toolsets tools/list names beside the core and discovery tools, separated by commas: ${TOOLSETS.join(', ')}, ` +
        "or all; empty for the core alone. Omitted: the OAuth connection's choice, else the app's (MCP settings).",
    ),
});
type McpScope = Scope<{ appId: string }, z.output<typeof mcpQuery>, z.output<typeof mcpBody>>;

const declaresElicitation = (initialize: Message) =>
  !!(initialize.params?.capabilities as { elicitation?: unknown } | undefined)?.elicitation;

/** A refusal as the transport answers it: a JSON-RPC error, under the request's id when it has one. */
const refusal = (r: Refusal, body?: unknown) => {
  const id = body && !Array.isArray(body) && typeof body === 'object' ? (body as Message).id : undefined;
  return new Reply(r.status, {
    jsonrpc: '2.0' as const,
    error: { code: r.code, message: r.message, ...(r.data !== undefined ? { data: r.data } : {}) },
    id: typeof id === 'string' || typeof id === 'number' ? id : null,
  });
};

/**
 * The MCP endpoint: the app's settings and the token's audience checked, then the protocol era decided by the SDK's
 * own classification (`classifyInboundRequest`: a request carrying the 2026-07-28 `_meta` envelope is of that
 * revision, one without it of the 2025 era; a request that is neither, or whose headers disagree with its body, is
 * refused as the SDK refuses it), and the request answered by that era's server (src/mcp/modern.ts, legacy.ts).
 */
async function handleMcp(s: McpScope): Promise<Reply<z.input<typeof mcpAnswer>> | Reply<RawBody>> {
  const { deps, app: appRecord, caller } = s;
  const app = appRecord!;
  const settings = await cachedSettings(s.em, deps.credentials, app.id);
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

  // A batch is a 2025 form (2026-07-28 has none): unless it claims 2026-07-28 (the header, or an element's `_meta`
  // envelope, which the SDK then refuses), it goes to the 2025 era, which answers each message under its own id
  // (-32600 for one it cannot take) where the SDK's classifier would refuse the whole batch for one bad element.
  const legacyBatch =
    Array.isArray(s.body) &&
    s.headers['mcp-protocol-version'] !== MODERN &&
    !s.body.some((m) => (m as Message).params?._meta?.[PROTOCOL_VERSION_META_KEY] !== undefined);
  const route = legacyBatch
    ? ({ kind: 'legacy' } as const)
    : classifyInboundRequest({
        httpMethod: 'POST',
        protocolVersionHeader: s.headers['mcp-protocol-version'],
        mcpMethodHeader: s.headers['mcp-method'],
        mcpNameHeader: s.headers['mcp-name'],
        body: s.body,
      });
  if (route.kind === 'reject')
    return refusal({ status: route.httpStatus, code: route.code, message: route.message, data: route.data }, s.body);
  if (route.kind === 'modern') return handleModern(s, settings);
  return handleLegacy(s, settings);
}

/** The context a request's calls run in: the app, its settings, the caller and the connection they are logged under. */
function contextOf(
  s: McpScope,
  settings: McpSettingsView,
  connectionId: string | null,
  guardrails: McpRequestContext['guardrails'],
  connectionToolsets: ToolsetChoice[] | null,
): McpRequestContext {
  const { caller } = s;
  return {
    toolsets: requestToolsets(s) ?? connectionToolsets ?? settings.toolsets,
    deps: s.deps,
    app: s.app!,
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
}

/**
 * The request's own choice of toolsets: the `toolsets` query parameter, else the `X-MCP-Toolsets` header; null when
 * it makes none. An unknown toolset is a 400 (a JSON-RPC -32600) naming it.
 */
function requestToolsets(s: McpScope): ToolsetChoice[] | null {
  const [from, value] =
    s.query.toolsets !== undefined ? ['toolsets', s.query.toolsets] : ['X-MCP-Toolsets', s.headers['x-mcp-toolsets']];
  const choice = requestedToolsets(value);
  if (choice && 'unknown' in choice)
    throw badRequest(`${from}: no toolset is named "${choice.unknown}" (${TOOLSETS.join(', ')}, or all)`);
  return choice;
}

/**
 * An OAuth connection's state (its caps, whether its client declared elicitation at its last `initialize`), kept
 * beside the app in this process (src/mcp/connections.ts), and marked used.
 */
async function oauthConnection(s: McpScope, connectionId: string) {
  const conn = await connectionState(s.em, s.deps.credentials, s.app!.id, connectionId, ['oauth']);
  if (conn) await markUsed(s.em, conn.id);
  return conn;
}

/**
 * 2026-07-28: no handshake and no session. A key's calls are logged under the key session named by the client's
 * `clientInfo` in the request's `_meta` (made at its first request); an OAuth connection's under itself.
 */
async function handleModern(s: McpScope, settings: McpSettingsView): Promise<Reply<RawBody>> {
  const { caller } = s;
  let connectionId: string | null;
  let guardrails = settings.key_guardrails ?? NO_GUARDRAILS;
  let toolsets: ToolsetChoice[] | null = null;
  if (caller.kind === 'oauth') {
    const conn = await oauthConnection(s, caller.connectionId);
    connectionId = conn?.id ?? null;
    guardrails = conn?.guardrails ?? NO_GUARDRAILS;
    toolsets = conn?.toolsets ?? null;
  } else {
    const meta = (s.body as Message).params?._meta as Record<string, unknown> | undefined;
    const client = meta?.[CLIENT_INFO_META_KEY] as { name?: unknown } | undefined;
    connectionId = await keySession(
      s.em,
      s.deps.credentials,
      s.app!.id,
      caller.kind === 'admin' ? 'admin_key' : 'secret_key',
      typeof client?.name === 'string' ? client.name : 'MCP client',
    );
    await markUsed(s.em, connectionId);
  }
  const url = `${s.origin}/apps/${encodeURIComponent(s.app!.id)}/mcp`;
  return serveModern(contextOf(s, settings, connectionId, guardrails, toolsets), url, s.headers, s.body);
}

/**
 * The 2025 protocol versions: with a key, `initialize` records a session and answers its `Mcp-Session-Id`, which
 * the client sends back so its calls are logged under it. A destructive call by a client that declared elicitation
 * asks the person first on the call's event stream.
 */
async function handleLegacy(s: McpScope, settings: McpSettingsView) {
  const { em, deps, caller } = s;
  const app = s.app!;
  const parsed = (Array.isArray(s.body) ? s.body : [s.body]) as JSONRPCMessage[];
  const messages = parsed as Message[];
  const problem =
    transportChecks(parsed, Array.isArray(s.body), s.headers['mcp-protocol-version']) ??
    headerMismatch(parsed, { method: s.headers['mcp-method'], name: s.headers['mcp-name'] });
  if (problem) return refusal(problem, s.body);
  const initialize = messages.find((m) => m.method === 'initialize');
  let connectionId: string | null = null;
  let newSession: string | null = null;
  let guardrails = settings.key_guardrails ?? NO_GUARDRAILS;
  let elicits = false;
  let toolsets: ToolsetChoice[] | null = null;
  if (caller.kind === 'oauth') {
    const conn = await oauthConnection(s, caller.connectionId);
    connectionId = conn?.id ?? null;
    guardrails = conn?.guardrails ?? NO_GUARDRAILS;
    elicits = conn?.elicitation ?? false;
    toolsets = conn?.toolsets ?? null;
  } else if (initialize) {
    const clientInfo = (initialize.params?.clientInfo ?? {}) as { name?: unknown };
    const session = await recordKeyConnection(
      em,
      app.id,
      caller.kind === 'admin' ? 'admin_key' : 'secret_key',
      typeof clientInfo.name === 'string' ? clientInfo.name : 'MCP client',
      declaresElicitation(initialize),
    );
    // A reused session whose client now says otherwise about elicitation: every process forgets what it kept.
    if (session.changed) await deps.credentials.announce(app.id);
    newSession = connectionId = session.id;
  } else if (s.headers['mcp-session-id']) {
    const session = await connectionState(em, deps.credentials, app.id, s.headers['mcp-session-id'], [
      'secret_key',
      'admin_key',
    ]);
    if (session) await markUsed(em, session.id);
    connectionId = session?.id ?? null;
    elicits = session?.elicitation ?? false;
  }
  // Whether an OAuth connection's client can be asked (MCP elicitation) is what it declared at its last
  // `initialize` (a key session's is recorded with the session); the row is written only when that changes, and
  // every process then forgets the connection's state it kept.
  if (initialize && caller.kind === 'oauth' && connectionId) {
    const changed = await sql(
      em,
      'update mcp_connections set elicitation = $2 where id = $1 and elicitation <> $2 returning id',
      [connectionId, declaresElicitation(initialize)],
    );
    if (changed.length) await deps.credentials.announce(app.id);
  }
  // The person's answer to a question a destructive call asked (a JSON-RPC response): handed to that call.
  const who = { appId: app.id, connectionId };
  if (messages.every((m) => m.method === undefined) && (await deliverAnswers(em, deps.orm, deps.logger, messages, who)))
    return new Reply(202, '');

  const context = contextOf(s, settings, connectionId, guardrails, toolsets);
  const sessionHeader: Record<string, string> = newSession ? { 'Mcp-Session-Id': newSession } : {};

  // A destructive tool called by a client that can be asked: the answer is an event stream that asks the person
  // first (`elicitation/create`), then carries the call's result, or says it was declined.
  const call = !Array.isArray(s.body) && messages[0].method === 'tools/call' ? messages[0] : null;
  const args = (call?.params?.arguments ?? {}) as Record<string, unknown>;
  // A call through call_tool asks as the tool it names would.
  const inner = call?.params?.name === CALL_TOOL ? proxied(args, context) : null;
  const tool = call
    ? inner && 'name' in inner
      ? asksFirst(inner.name, inner.args, context, elicits)
      : asksFirst(String(call.params?.name), args, context, elicits)
    : null;
  if (tool) {
    const stream = new PassThrough();
    void confirmThenCall(stream, context, tool, args, parsed, call!.id ?? null).catch((err: unknown) => {
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
      'Protocol versions 2026-07-28 and 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05 (the request says which: a ' +
      '2026-07-28 request carries its version, client info and capabilities in `params._meta` and the ' +
      '`Mcp-Protocol-Version: 2026-07-28` header, needs no `initialize` and may start with `server/discover`; a ' +
      '2025 client starts with `initialize`). Under 2026-07-28 the `Mcp-Method` header (and `Mcp-Name` for ' +
      '`tools/call`, `prompts/get`, `resources/read`) is required; under any version a header that disagrees with ' +
      'the body is refused (400, -32020), so a gateway never routes one request as another. Lists answered under ' +
      '2026-07-28 carry `ttlMs` and `cacheScope`. One JSON-RPC message per request; a batch only under protocol ' +
      'versions 2025-03-26 and 2024-11-05 (the `Mcp-Protocol-Version` header, 2025-03-26 when it is absent): from ' +
      '2025-06-18 on a batch is refused with -32600. Notifications get an empty 202. ' +
      'With a key, `initialize` records a connection and answers an `Mcp-Session-Id` header; send it back so calls ' +
      'are logged under it (a 2026-07-28 request is logged under the session of its `_meta` client name). ' +
      'A 401 carries `WWW-Authenticate: Bearer resource_metadata="..."` for OAuth sign-in; every other refusal is a ' +
      'JSON-RPC error (-32700 not JSON, -32600 not a message the server takes, -32020 headers that disagree with the ' +
      'body, -32000 with 403 while the server is turned off). A destructive tool called by a client that declared ' +
      'elicitation asks the person first: under 2025 versions the answer is an event stream (`elicitation/create` ' +
      'first, then the result once the person confirms; their answer is POSTed here), under 2026-07-28 an ' +
      '`input_required` result whose `requestState` the client sends back with the answer.',
    params: appIdParams,
    query: mcpQuery,
    body: mcpBody,
    response: mcpAnswer,
    replies: {
      202: { description: 'Notifications and responses only: accepted, no body' },
      400: refused(
        'Not JSON (-32700), or not a JSON-RPC message the server takes (-32600: not a message, `initialize` beside ' +
          'another message, a batch under protocol version 2025-06-18 or later, an unsupported version), or ' +
          '`Mcp-Method`/`Mcp-Name`/`Mcp-Protocol-Version` headers that disagree with the body or are missing under ' +
          '2026-07-28 (-32020), or a 2026-07-28 request without its `_meta` envelope (-32602)',
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
      '`[{ entitlement_id, amount, period }]` (replacing the list); an omitted field keeps its value. `toolsets` ' +
      `(replacing the list; ${TOOLSETS.join(', ')}, or all) are the groups of tools tools/list names beside the ` +
      'core and discovery tools (none by default: the list stays under 20,000 characters); an OAuth connection or a ' +
      'request may choose others, and tools not listed stay callable.',
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
    summary: "Set an OAuth connection's guard-rails and toolsets",
    description:
      '`guardrails.spend_cap` `{ amount, currency, period: day|month }` (or null: no cap) bounds the money the ' +
      "connection's tools start in checkouts and plan changes per period; `guardrails.usage_caps` " +
      '`[{ entitlement_id, amount, period }]` (replacing the list) bounds the usage they record per entitlement. ' +
      "A field left out keeps its value. `toolsets` replaces the connection's choice of toolsets for tools/list " +
      "(null: the app's). Key sessions share the app's `key_guardrails` and choose toolsets per request (400 here).",
    params: appIdParams.extend({ connectionId: z.string().min(1).max(255) }),
    body: z.object({
      guardrails: guardrailsInput.optional(),
      toolsets: toolsetsSchema
        .nullable()
        .optional()
        .describe("The connection's toolsets for tools/list; null: the app's. Omitted: unchanged."),
    }),
    response: connectionSchema,
    handler: async (s) => {
      const connection = await setConnection(
        s.em,
        ctxOf(s).app.id,
        s.params.connectionId,
        s.body,
        appCap(toolsOf(s.routes), await getSettings(s.em, ctxOf(s).app.id)),
      );
      // The new caps and toolsets hold at once in every API process (each keeps a connection's state beside the app).
      await s.deps.credentials.announce(ctxOf(s).app.id);
      return connection;
    },
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
    handler: async (s) => {
      const deleted = await deleteConnection(s.em, ctxOf(s).app.id, s.params.connectionId);
      // Cut off at once in every API process (each keeps a token's check beside the app), before the answer.
      await s.deps.credentials.announce(ctxOf(s).app.id);
      return deleted;
    },
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
