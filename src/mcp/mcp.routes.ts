import { SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { errorSchema } from '../http/contract.js';
import { AppError, forbidden } from '../errors.js';
import { cursorPageSchema } from '../http/pagination.js';
import { Reply, ctxOf, route, type RawBody, type Scope } from '../http/route.js';
import { deletedSchema } from '../http/schemas.js';
import { callSchema, callsQuery, flushCalls, listCalls } from './calls.js';
import {
  connectionSchema,
  deleteConnection,
  listConnections,
  recordKeyConnection,
  touchConnection,
} from './connections.js';
import { dispatch } from './server.js';
import { cachedSettings, getSettings, scopeOf, settingsPatch, settingsSchema, updateSettings } from './settings.js';
import { appCap, toolsOf } from './tools.js';
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
/** The transport refuses a message it cannot take with a JSON-RPC error; validation answers `{ error }`. */
const refused = (description: string) => ({ description, schema: z.union([errorSchema, rpcError]) });

type Message = { method?: string; params?: Record<string, unknown> };

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
  if (caller.kind === 'oauth') connectionId = await touchConnection(em, app.id, caller.connectionId, ['oauth']);
  else if (initialize) {
    const clientInfo = (initialize.params?.clientInfo ?? {}) as { name?: unknown };
    newSession = await recordKeyConnection(
      em,
      app.id,
      caller.kind === 'admin' ? 'admin_key' : 'secret_key',
      typeof clientInfo.name === 'string' ? clientInfo.name : 'MCP client',
    );
    connectionId = newSession;
  } else if (s.headers['mcp-session-id']) {
    connectionId = await touchConnection(em, app.id, s.headers['mcp-session-id'], ['secret_key', 'admin_key']);
  }

  const answers = await dispatch(parsed, {
    deps,
    app,
    requestId: s.requestId,
    origin: s.origin,
    settings,
    level: caller.kind === 'oauth' ? caller.level : null,
    connectionId,
    tools: toolsOf(s.routes),
  });
  const out: Record<string, string> = newSession ? { 'Mcp-Session-Id': newSession } : {};
  if (!answers.length) return new Reply(202, '', out);
  return new Reply(200, (Array.isArray(s.body) ? answers : answers[0]) as z.input<typeof mcpAnswer>, out);
}

/** The transport's refusal, as the SDK's streamable HTTP transport words it: a JSON-RPC error without an id. */
const refusal = (status: number, code: number, message: string) =>
  new Reply(status, { jsonrpc: '2.0' as const, error: { code, message }, id: null });

/** Batch limit of the SDK's streamable HTTP transport, kept. */
const MAX_BATCH = 100;

/**
 * The checks the SDK's streamable HTTP transport makes on a POST before it hands the messages on, beside the route's
 * own schema (which took the body as JSON-RPC messages): the batch's size, `initialize` alone, and the
 * `Mcp-Protocol-Version` header after initialization. A refusal, or the messages.
 */
function transportChecks(
  body: z.output<typeof mcpBody>,
  version: string | undefined,
): { refused: Reply<z.input<typeof mcpAnswer>> } | { messages: JSONRPCMessage[] } {
  const messages = (Array.isArray(body) ? body : [body]) as JSONRPCMessage[];
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

const notAllowed = () => {
  throw new AppError(
    405,
    'Method not allowed: the MCP endpoint is stateless and has no event stream; POST JSON-RPC messages',
    undefined,
    { Allow: 'POST' },
  );
};

export const mcpRoutes = [
  route({
    method: 'POST',
    path: '/apps/:appId/mcp',
    transport: 'mcp',
    consoleHidden: true,
    writes: false,
    sdk: 'mcp.post',
    auth: ['S', 'O'],
    tags,
    summary: 'MCP server (streamable HTTP, stateless, JSON responses)',
    description:
      'One JSON-RPC message or a batch per request; notifications get an empty 202. Protocol versions 2025-11-25, ' +
      '2025-06-18, 2025-03-26 and 2024-11-05. ' +
      'With a key, `initialize` records a connection and answers an `Mcp-Session-Id` header; send it back so calls ' +
      'are logged under it. ' +
      'A 401 carries `WWW-Authenticate: Bearer resource_metadata="..."` for OAuth sign-in; 403 while the server is ' +
      'turned off.',
    params: appIdParams,
    body: mcpBody,
    errors: [403],
    response: mcpAnswer,
    replies: {
      202: { description: 'Notifications and responses only: accepted, no body' },
      400: refused('Not a JSON-RPC message the server takes'),
      406: refused('The Accept header does not take application/json and text/event-stream'),
      415: refused('Not JSON'),
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
    path: '/apps/:appId/mcp',
    transport: 'mcp',
    consoleHidden: true,
    writes: false,
    sdk: 'mcp.getStream',
    auth: ['N'],
    tags,
    summary: 'Not supported (405): no event stream',
    errors: [405],
    handler: notAllowed,
  }),
  route({
    method: 'DELETE',
    path: '/apps/:appId/mcp',
    transport: 'mcp',
    consoleHidden: true,
    writes: false,
    sdk: 'mcp.deleteSession',
    auth: ['N'],
    tags,
    summary: 'Not supported (405): no sessions to end',
    errors: [405],
    handler: notAllowed,
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
    handler: (s) => getSettings(s.em, ctxOf(s).app.id),
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
      'tool names are a 400).',
    params: appIdParams,
    body: settingsPatch,
    response: settingsSchema,
    handler: (s) =>
      updateSettings(s.em, ctxOf(s).app.id, s.body, new Set(toolsOf(s.routes).map((t) => t.name)), (change) =>
        s.deps.credentials.confirm(change),
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
