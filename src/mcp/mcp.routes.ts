// The MCP server's routes: the endpoint itself (its request handled in endpoint.ts) and the operator's MCP settings,
// OAuth connections and tool call log.
import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { cursorPageSchema } from '../http/pagination.js';
import { ctxOf, route } from '../http/route.js';
import { deletedSchema } from '../http/schemas.js';
import { callSchema, callsQuery, flushCalls, listCalls } from './calls.js';
import { connectionSchema, deleteConnection, listConnections, setConnection } from './connections.js';
import { guardrailsInput } from './guardrails.js';
import { getSettings, presentSettings, scopeOf, settingsPatch, settingsSchema, updateSettings } from './settings.js';
import { appCap, toolsOf } from './tools.js';
import { TOOLSETS, toolsetsSchema } from './toolsets.js';

import { handleMcp, mcpAnswer, mcpBody, mcpQuery, resourceMetadataUrl, rpcError } from './endpoint.js';

const tags = ['MCP'];

/**
 * Every refusal of the endpoint is a JSON-RPC error (src/security/mcp-guard.ts, `mcpJsonRpcErrors`), as MCP clients
 * read it: -32700 for a body that is not JSON, -32600 for one that is not a message the server takes, -32000 for the
 * transport's and the app's refusals (the server turned off, a Host, Origin or Accept it does not take), -32603 for
 * a fault. Only the 401 keeps `{ error }` (the spec's Authentication section) with its `WWW-Authenticate`.
 */
const refused = (description: string) => ({ description, schema: rpcError });

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
