import {
  CallToolRequestSchema,
  GetPromptRequestSchema,
  InitializeRequestSchema,
  JSONRPCRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/core';
import {
  isJSONRPCRequest,
  LATEST_PROTOCOL_VERSION,
  ProtocolErrorCode,
  Server,
  SUPPORTED_PROTOCOL_VERSIONS,
  type AuthInfo,
  type JSONRPCMessage,
  type MessageExtraInfo,
  type RequestId,
  type Transport,
} from '@modelcontextprotocol/server';
import { CAPABILITIES, INSTRUCTIONS, plainCallJson, registerHandlers, serverInfo, version } from './handlers.js';
import type { McpRequestContext } from './run-tool.js';

/**
 * The 2025 protocol versions (2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05 and 2024-10-07): one SDK `Server` per
 * process, built once, whose handlers read the request's context (app, settings, caller, tools) from the message's
 * `authInfo`. A server per request costs more than the route a tool wraps; this one stays connected to
 * `LoopbackTransport`, which gives each request an id of its own, so concurrent requests with the same JSON-RPC id
 * never meet. Every version of this era shares the SDK's 2025 wire codec, and nothing here is kept between requests
 * but the server itself: any API process answers any request.
 */

/** The request's context, handed to the shared server's handlers with each message (see `dispatch`). */
const contextOf = (extra: { http?: { authInfo?: AuthInfo } }) => extra.http!.authInfo!.extra!.mcp as McpRequestContext;

function buildLegacyServer(): Server {
  const server = new Server({ name: 'offerkit', version }, { capabilities: CAPABILITIES, instructions: INSTRUCTIONS });
  // The server's title names the app, which differs per request: `initialize` is answered here, as the SDK does
  // (without keeping the client's version or capabilities on the shared server: they are the request's own).
  server.removeRequestHandler('initialize');
  server.setRequestHandler('initialize', async (request, extra) => {
    const ctx = contextOf(extra);
    const asked = request.params.protocolVersion;
    return {
      protocolVersion: SUPPORTED_PROTOCOL_VERSIONS.includes(asked) ? asked : LATEST_PROTOCOL_VERSION,
      capabilities: CAPABILITIES,
      serverInfo: serverInfo(ctx.app.name),
      instructions: INSTRUCTIONS,
    };
  });
  registerHandlers(server, { contextOf });
  return server;
}

/**
 * A transport that never leaves the process: `dispatch` hands it a request's messages, each request under an id of
 * its own, and gets back the server's answers under the ids the client sent. Whatever else the server sends
 * (notifications, requests to the client) has nowhere to go on a stateless JSON endpoint and is dropped, as the SDK's
 * transport in JSON mode drops it.
 */
class LoopbackTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;
  private next = 0;
  private readonly waiting = new Map<RequestId, { id: RequestId; resolve: (m: JSONRPCMessage) => void }>();

  async start() {}
  async close() {}
  async send(message: JSONRPCMessage) {
    if (!('id' in message) || isJSONRPCRequest(message)) return;
    const waiter = this.waiting.get(message.id as RequestId);
    if (!waiter) return;
    this.waiting.delete(message.id as RequestId);
    waiter.resolve({ ...message, id: waiter.id } as JSONRPCMessage);
  }

  /** Delivers the messages; resolves with the answers to its requests, in order (notifications have none). */
  deliver(messages: JSONRPCMessage[], extra: MessageExtraInfo): Promise<JSONRPCMessage[]> {
    const answers: Promise<JSONRPCMessage>[] = [];
    for (const message of messages) {
      if (isJSONRPCRequest(message)) {
        const own = ++this.next;
        answers.push(new Promise((resolve) => this.waiting.set(own, { id: message.id, resolve })));
        this.onmessage?.({ ...message, id: own }, extra);
      } else this.onmessage?.(message, extra);
    }
    return Promise.all(answers);
  }
}

let shared: Promise<LoopbackTransport> | null = null;

/**
 * The answer to a request that is one plain `tools/call` (the common case), as JSON text; null for anything else.
 * Answered here, not by the SDK: it would parse the request and our own result with its schemas again (the route's
 * schema has checked the message; `plainCallJson` builds the result), and the result is serialized once.
 */
export async function answerPlainCall(messages: JSONRPCMessage[], ctx: McpRequestContext): Promise<string | null> {
  if (messages.length !== 1 || !plainToolCall(messages[0])) return null;
  const m = messages[0];
  const p = m.params as { name: string; arguments?: Record<string, unknown> };
  return plainCallJson(m.id, p.name, p.arguments ?? {}, ctx);
}

/** Answers a request's JSON-RPC messages (already checked as such) in the request's context. */
export async function dispatch(messages: JSONRPCMessage[], ctx: McpRequestContext): Promise<JSONRPCMessage[]> {
  shared ??= (async () => {
    const transport = new LoopbackTransport();
    await buildLegacyServer().connect(transport);
    return transport;
  })();
  const transport = await shared;
  const extra = { authInfo: { token: '', clientId: '', scopes: [], extra: { mcp: ctx } } };
  // Params a method's request schema refuses are JSON-RPC's -32602 (the SDK would answer -32603, an internal error,
  // for a request it could not parse), each under its own id; the rest go to the SDK's server.
  const refused = messages.map(invalidParams);
  const answers = await transport.deliver(
    messages.filter((_, i) => !refused[i]),
    extra,
  );
  return messages.flatMap((m, i) => refused[i] ?? (isRequest(m) ? [answers.shift()!] : []));
}

/** The request schema (`@modelcontextprotocol/core`) of each method this server answers. */
const REQUEST_SCHEMAS: Record<string, { safeParse(v: unknown): { success: boolean; error?: { issues: unknown[] } } }> =
  {
    initialize: InitializeRequestSchema,
    ping: PingRequestSchema,
    'tools/list': ListToolsRequestSchema,
    'tools/call': CallToolRequestSchema,
    'resources/list': ListResourcesRequestSchema,
    'resources/templates/list': ListResourceTemplatesRequestSchema,
    'resources/read': ReadResourceRequestSchema,
    'prompts/list': ListPromptsRequestSchema,
    'prompts/get': GetPromptRequestSchema,
  };

const isRequest = (m: JSONRPCMessage) => 'method' in m && 'id' in m && m.id !== undefined;

/** A request whose params its method's schema refuses: the -32602 answer naming the first problem; else null. */
function invalidParams(m: JSONRPCMessage): JSONRPCMessage[] | null {
  if (!isRequest(m)) return null;
  const { method, id } = m as { method: string; id: RequestId };
  // The SDK's request schema is strict: a request with members JSON-RPC does not define is no request to it, and
  // would go unanswered. It is -32600 here, under its own id.
  const request = JSONRPCRequestSchema.safeParse(m);
  if (!request.success) {
    const issue = request.error.issues[0];
    const keys = 'keys' in issue ? `: ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}` : '';
    return [
      {
        jsonrpc: '2.0',
        id,
        error: { code: ProtocolErrorCode.InvalidRequest, message: `Invalid Request: ${issue.message}${keys}` },
      },
    ];
  }
  const parsed = REQUEST_SCHEMAS[method]?.safeParse(m);
  if (!parsed || parsed.success) return null;
  const issue = parsed.error!.issues[0] as { path: PropertyKey[]; message: string };
  const at = issue.path.map(String).join('.');
  return [
    {
      jsonrpc: '2.0',
      id,
      error: {
        code: ProtocolErrorCode.InvalidParams,
        message: `Invalid params for ${method}: ${at ? `${at}: ` : ''}${issue.message}`,
      },
    },
  ];
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** A `tools/call` request with a string name, object arguments (or none), and nothing else the SDK handles. */
function plainToolCall(m: JSONRPCMessage): m is JSONRPCMessage & { id: RequestId; params: Record<string, unknown> } {
  // The route's schema has checked the message (a method, and an id that is a string or an integer when present):
  // a request is one with an id. The SDK's `isJSONRPCRequest` would parse it with its schema once more.
  if (!('method' in m) || !('id' in m) || m.id === undefined) return false;
  if (m.method !== 'tools/call' || !isPlainObject(m.params)) return false;
  const { name, arguments: args, _meta, ...rest } = m.params;
  return (
    typeof name === 'string' &&
    (args === undefined || isPlainObject(args)) &&
    (_meta === undefined || isPlainObject(_meta)) &&
    Object.keys(rest).length === 0
  );
}

/**
 * The protocol version a request speaks: its `Mcp-Protocol-Version` header, which a client MUST send after
 * initialization from 2025-06-18 on; without it, 2025-03-26, as MCP's transport page tells a server to assume.
 */
export const requestProtocolVersion = (header: string | undefined) => header ?? '2025-03-26';

/** The first protocol version without JSON-RPC batches (2025-03-26 added them; 2025-06-18 removed them). */
export const BATCHES_REMOVED_IN = '2025-06-18';

/** Batch limit of the SDK's streamable HTTP transport, kept. */
const MAX_BATCH = 100;

/** A transport refusal: the HTTP status and the JSON-RPC error (without an id, as the SDK's transport words it). */
export interface Refusal {
  status: number;
  code: number;
  message: string;
  data?: unknown;
}

/**
 * The checks the SDK's streamable HTTP transport makes on a POST before it hands the messages on, beside the route's
 * own schema (which took the body as JSON-RPC messages): the batch's size, `initialize` alone, and the
 * `Mcp-Protocol-Version` header after initialization. A batch is taken only in the protocol versions that had them
 * (2025-03-26, and 2024-11-05's JSON-RPC 2.0): from 2025-06-18 on it is an Invalid Request.
 */
export function transportChecks(messages: JSONRPCMessage[], batch: boolean, version: string | undefined) {
  const speaks = requestProtocolVersion(version);
  if (batch && SUPPORTED_PROTOCOL_VERSIONS.includes(speaks) && speaks >= BATCHES_REMOVED_IN)
    return refusalOf(
      400,
      -32600,
      `Invalid Request: JSON-RPC batches are not part of MCP protocol version ${speaks} (they were removed in ` +
        `${BATCHES_REMOVED_IN}); send one message per request`,
    );
  if (messages.length > MAX_BATCH)
    return refusalOf(400, -32600, `Invalid Request: Batch must not exceed ${MAX_BATCH} messages`);
  if (messages.some((m) => 'method' in m && m.method === 'initialize')) {
    if (messages.length > 1)
      return refusalOf(400, -32600, 'Invalid Request: Only one initialization request is allowed');
  } else if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
    return refusalOf(
      400,
      -32000,
      `Bad Request: Unsupported protocol version: ${version} (supported versions: ` +
        `${[...SUPPORTED_PROTOCOL_VERSIONS, '2026-07-28'].join(', ')})`,
    );
  }
  return null;
}

const refusalOf = (status: number, code: number, message: string, data?: unknown): Refusal => ({
  status,
  code,
  message,
  ...(data !== undefined ? { data } : {}),
});

/** The JSON-RPC error code of a header that disagrees with the body (SEP-2243's HeaderMismatch). */
export const HEADER_MISMATCH = -32020;

/** The body field each method's `Mcp-Name` header mirrors (SEP-2243). */
const NAME_SOURCE: Record<string, string> = { 'tools/call': 'name', 'prompts/get': 'name', 'resources/read': 'uri' };

/** An `Mcp-Name` value as sent: plain, or `=?base64?...?=` for a value a header cannot carry as it is. */
function decodeHeader(value: string): string | null {
  const m = /^=\?base64\?(.*)\?=$/i.exec(value.trim());
  if (!m) return value.trim();
  return /^[A-Za-z0-9+/]*={0,2}$/.test(m[1]) ? Buffer.from(m[1], 'base64').toString('utf8') : null;
}

/**
 * `Mcp-Method` and `Mcp-Name`, when a 2025-era request carries them (a gateway may route on them), must say what the
 * body says: a mismatch is refused (-32020, 400) as the SDK refuses it on a 2026-07-28 request, so a gateway never
 * routes one request as another. The 2026-07-28 requests are checked by the SDK (`createMcpHandler`), which also
 * requires the headers there.
 */
export function headerMismatch(
  messages: JSONRPCMessage[],
  headers: { method?: string; name?: string },
): Refusal | null {
  if (headers.method === undefined && headers.name === undefined) return null;
  if (messages.length !== 1 || !('method' in messages[0]))
    return refusalOf(400, HEADER_MISMATCH, 'Bad Request: Mcp-Method and Mcp-Name name a single request');
  const m = messages[0] as { method: string; params?: Record<string, unknown> };
  const disagree = (header: string, body: string) =>
    refusalOf(400, HEADER_MISMATCH, `Bad Request: the request headers and body disagree: ${body}`, {
      mismatch: { header, body },
    });
  if (headers.method !== undefined && headers.method.trim() !== m.method)
    return disagree(
      headers.method,
      `the body names method ${m.method} but the Mcp-Method header names ${headers.method}`,
    );
  const field = NAME_SOURCE[m.method];
  const bodyName = field ? m.params?.[field] : undefined;
  if (headers.name !== undefined && typeof bodyName === 'string') {
    const named = decodeHeader(headers.name);
    if (named !== bodyName)
      return disagree(
        headers.name,
        `the body carries params.${field}="${bodyName}" but the Mcp-Name header names "${named}"`,
      );
  }
  return null;
}
