// The MCP endpoint's request: its JSON-RPC shapes, the era it belongs to (2026-07-28 stateless, or the 2025
// sessions), the caller's context and toolsets, and the answer of that era's server. The route is in mcp.routes.ts.
import {
  CLIENT_INFO_META_KEY,
  classifyInboundRequest,
  PROTOCOL_VERSION_META_KEY,
  type JSONRPCMessage,
} from '@modelcontextprotocol/server';
import { PassThrough } from 'node:stream';
import { z } from 'zod';
import { sql } from '../db/sql.js';
import { AppError, badRequest, forbidden } from '../errors.js';
import { Reply, type RawBody, type Scope } from '../http/route.js';
import { mcpResourceUrl, resourceKey } from '../oauth/oauth.service.js';
import { asksFirst, confirmThenCall } from './confirm.js';
import { CALL_TOOL, proxied } from './discovery.js';
import { connectionState, keySession, markUsed, recordKeyConnection } from './connections.js';
import { deliverAnswers } from './elicitation.js';
import { NO_GUARDRAILS } from './guardrails.js';
import { answerPlainCall, dispatch, headerMismatch, transportChecks, type Refusal } from './legacy.js';
import { serveModern } from './modern.js';
import type { McpRequestContext } from './run-tool.js';
import { cachedSettings, type McpSettingsView } from './settings.js';
import { toolsOf } from './tools.js';
import { requestedToolsets, TOOLSETS, type ToolsetChoice } from './toolsets.js';

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
export const mcpBody = z.union([jsonRpcMessage, z.array(jsonRpcMessage).min(1)]);

const rpcId = z.union([z.string(), z.number(), z.null()]);
export const rpcError = z.object({
  jsonrpc: z.literal('2.0'),
  id: rpcId,
  error: z.object({ code: z.number(), message: z.string(), data: z.unknown().optional() }),
});
const rpcResult = z.object({ jsonrpc: z.literal('2.0'), id: rpcId, result: z.record(z.string(), z.unknown()) });
const rpcResponse = z.union([rpcResult, rpcError]);
/** The answer to a request, or to a batch (one entry per request in it). */
export const mcpAnswer = z.union([rpcResponse, z.array(rpcResponse)]);

type Message = {
  method?: string;
  id?: string | number;
  params?: Record<string, unknown> & { _meta?: Record<string, unknown> };
};
/** The protocol revision of the stateless core (src/mcp/modern.ts). */
const MODERN = '2026-07-28';
/** The request's choice of toolsets for `tools/list` (src/mcp/toolsets.ts); the `X-MCP-Toolsets` header says the same. */
export const mcpQuery = z.object({
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
export async function handleMcp(s: McpScope): Promise<Reply<z.input<typeof mcpAnswer>> | Reply<RawBody>> {
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
