import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  InitializeRequestSchema,
  isJSONRPCRequest,
  JSONRPCRequestSchema,
  LATEST_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type MessageExtraInfo,
  type RequestId,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ErrorCode,
  ReadResourceRequestSchema,
  PingRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { createRequire } from 'node:module';
import { AppError } from '../errors.js';
import { logCall } from './calls.js';
import { RESOURCE_MIME_TYPE, UI_RESOURCES, uiMetaOf, uiPage } from './apps.js';
import { PROMPTS, promptMessage } from './prompts.js';
import { denial } from './tools.js';
import { refusal, runTool, type McpRequestContext, type Outcome } from './run-tool.js';

export type { McpRequestContext } from './run-tool.js';
import { decodeComponent } from '../http/validate.js';
import { MCP_ACCOUNT_ARG } from '../http/route.js';

const require = createRequire(import.meta.url);
const { version } = require('../../package.json') as { version: string };

export const INSTRUCTIONS =
  'This server manages one app of offerkit: its catalog (plans, entitlements, add-ons, incentives), accounts, usage, ' +
  'analytics, webhooks and events. Read the catalog first (the offer://catalog resource, or list_plans, ' +
  'list_entitlements, ' +
  'list_addons and list_incentives) so you use existing ids. Before creating, changing or deleting anything, tell ' +
  'the user ' +
  'exactly what you are about to do and wait for their confirmation. The account id is the argument namespaceId in ' +
  'every tool (the REST paths call it accountId). ' +
  'Every write tool takes dry_run: true, which answers what the call would do (its result or its refusal) and does nothing.';

const toolNamed = (ctx: McpRequestContext, name: string) => ctx.tools.find((t) => t.name === name);

interface ResourceDef {
  uri: string;
  name: string;
  description: string;
  /** Tools reading the same data: an OAuth connection reads the resource only while all of them are callable. */
  tools: string[];
  read(ctx: McpRequestContext, vars: Record<string, string>): Promise<unknown>;
}

async function viaTool(name: string, args: Record<string, unknown>, ctx: McpRequestContext): Promise<unknown> {
  return (await toolNamed(ctx, name)!.call(args, ctx)).body;
}

const RESOURCES: ResourceDef[] = [
  {
    uri: 'offer://app',
    name: 'app',
    description: "The app's name and id",
    tools: ['get_app'],
    read: async (ctx) => ({ id: ctx.app.id, name: ctx.app.name }),
  },
  {
    uri: 'offer://catalog',
    name: 'catalog',
    description: 'Every plan, entitlement, add-on and incentive of the app',
    tools: ['list_plans', 'list_entitlements', 'list_addons', 'list_incentives'],
    read: async (ctx) => ({
      plans: await viaTool('list_plans', {}, ctx),
      entitlements: await viaTool('list_entitlements', {}, ctx),
      addons: await viaTool('list_addons', {}, ctx),
      incentives: await viaTool('list_incentives', {}, ctx),
    }),
  },
  {
    uri: 'offer://pricing',
    name: 'pricing',
    description: 'The pricing cards of the plans that have one',
    tools: ['list_pricing_cards'],
    read: (ctx) => viaTool('list_pricing_cards', {}, ctx),
  },
  {
    uri: 'offer://events',
    name: 'events',
    description: 'Events of the last 30 days, newest first',
    tools: ['list_events'],
    read: (ctx) => viaTool('list_events', { limit: 100 }, ctx),
  },
];

const ACCOUNT_TEMPLATE = {
  uriTemplate: `offer://accounts/{${MCP_ACCOUNT_ARG}}`,
  name: 'account',
  description: "An account's resolved plan, incentive, add-ons and live usage",
  tools: ['get_account', 'get_account_access', 'get_account_usage'],
};

function readable(tools: string[], ctx: McpRequestContext): string | null {
  for (const name of tools) {
    const reason = denial(toolNamed(ctx, name)!, ctx.settings, ctx.level);
    if (reason) return `This resource needs ${tools.join(', ')}; ${reason}`;
  }
  return null;
}

/** A tool call: the route's answer (or the refusal) as the result, logged. */
async function callTool(name: string, args: Record<string, unknown>, ctx: McpRequestContext): Promise<CallToolResult> {
  const outcome = await toolOutcome(name, args, ctx);
  return {
    content: [{ type: 'text', text: outcome.text }],
    ...(outcome.structured ? { structuredContent: outcome.structured } : {}),
    isError: outcome.isError,
  };
}

/**
 * A tool the server does not have is a protocol error (JSON-RPC -32602, as MCP's tools page words it), not a tool
 * result: there is no tool whose output schema it could match.
 */
const unknownTool = (name: string) =>
  new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name} (tools/list names the tools this connection can call)`);

/** A JSON-RPC error answer, as text, for a request the plain path answers. */
const rpcErrorJson = (id: string, err: unknown) =>
  err instanceof McpError
    ? `{"jsonrpc":"2.0","id":${id},"error":{"code":${err.code},"message":${JSON.stringify(err.message)}}}`
    : `{"jsonrpc":"2.0","id":${id},"error":{"code":${ErrorCode.InternalError},"message":"Internal error"}}`;

/**
 * `callTool`'s result as JSON text, the route's answer serialized once: its JSON is the text block's string and,
 * as it is, the structured content (a list under `data`), instead of the object serialized a second time.
 */
async function callToolJson(name: string, args: Record<string, unknown>, ctx: McpRequestContext): Promise<string> {
  const outcome = await toolOutcome(name, args, ctx);
  const structured =
    outcome.structured === undefined
      ? ''
      : `,"structuredContent":${outcome.structuredJson ?? JSON.stringify(outcome.structured)}`;
  return `{"content":[{"type":"text","text":${JSON.stringify(outcome.text)}}]${structured},"isError":${outcome.isError}}`;
}

/** A tool call's outcome (the route's answer, or the refusal), logged. */
async function toolOutcome(name: string, args: Record<string, unknown>, ctx: McpRequestContext): Promise<Outcome> {
  const started = performance.now();
  const tool = toolNamed(ctx, name);
  let outcome: Outcome;
  if (!tool) outcome = refusal(404, `Unknown tool ${name}`);
  else {
    const reason = denial(tool, ctx.settings, ctx.level);
    outcome = reason ? refusal(403, reason) : await runTool(tool, args, ctx);
  }
  // Logged all the same (an agent calling a tool that is not there is worth an operator's look).
  logCall(ctx.deps.orm, ctx.deps.logger, {
    appId: ctx.app.id,
    connectionId: ctx.connectionId,
    tool: name,
    args,
    status: outcome.status,
    isError: outcome.isError,
    result: outcome.text,
    durationMs: performance.now() - started,
  });
  if (!tool) throw unknownTool(name);
  return outcome;
}

/** The request's context, handed to the shared server's handlers with each message (see `dispatch`). */
type Extra = { authInfo?: { extra?: Record<string, unknown> } };
const contextOf = (extra: Extra) => extra.authInfo!.extra!.mcp as McpRequestContext;

const CAPABILITIES = {
  tools: { listChanged: false },
  resources: { listChanged: false },
  prompts: { listChanged: false },
};

/**
 * The MCP server of this process: one SDK `Server`, built once, whose handlers read the request's context (app,
 * settings, caller, tools) from the message's `authInfo`. A server and transport per request cost more than the
 * route a tool wraps (the SDK builds an Ajv instance per server, and closing a transport builds an error for the
 * handlers still waiting); this one stays connected to `LoopbackTransport`, which gives each request an id of its
 * own, so concurrent requests with the same JSON-RPC id never meet.
 */
function buildMcpServer(): Server {
  const server = new Server({ name: 'offerkit', version }, { capabilities: CAPABILITIES, instructions: INSTRUCTIONS });
  // The server's title names the app, which differs per request: `initialize` is answered here, as the SDK does.
  server.removeRequestHandler('initialize');
  server.setRequestHandler(InitializeRequestSchema, async (request, extra) => {
    const ctx = contextOf(extra);
    const asked = request.params.protocolVersion;
    return {
      protocolVersion: SUPPORTED_PROTOCOL_VERSIONS.includes(asked) ? asked : LATEST_PROTOCOL_VERSION,
      capabilities: CAPABILITIES,
      serverInfo: { name: 'offerkit', title: `offerkit: ${ctx.app.name}`, version },
      instructions: INSTRUCTIONS,
    };
  });

  server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => {
    const ctx = contextOf(extra);
    return {
      tools: ctx.tools
        .filter((t) => denial(t, ctx.settings, ctx.level) === null)
        .map((t) => ({
          name: t.name,
          description: t.description,
          inputSchema: t.inputSchema,
          outputSchema: t.outputSchema,
          annotations: t.annotations,
          // The MCP App page that shows the tool's result (src/mcp/apps.ts), for hosts that support MCP Apps.
          ...(uiMetaOf(t.name) ? { _meta: uiMetaOf(t.name) } : {}),
        })),
    };
  });

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) =>
    callTool(request.params.name, (request.params.arguments ?? {}) as Record<string, unknown>, contextOf(extra)),
  );

  server.setRequestHandler(ListResourcesRequestSchema, async (_request, extra) => {
    const ctx = contextOf(extra);
    return {
      resources: RESOURCES.filter((r) => readable(r.tools, ctx) === null)
        .map((r) => ({
          uri: r.uri,
          name: r.name,
          description: r.description,
          mimeType: 'application/json',
        }))
        .concat(
          // The MCP App pages, while a tool they show is callable.
          UI_RESOURCES.filter((r) => r.tools.some((t) => readable([t], ctx) === null)).map((r) => ({
            uri: r.uri,
            name: r.name,
            description: r.description,
            mimeType: RESOURCE_MIME_TYPE,
          })),
        ),
    };
  });
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async (_request, extra) => {
    const ctx = contextOf(extra);
    return {
      resourceTemplates:
        readable(ACCOUNT_TEMPLATE.tools, ctx) === null
          ? [
              {
                uriTemplate: ACCOUNT_TEMPLATE.uriTemplate,
                name: ACCOUNT_TEMPLATE.name,
                description: ACCOUNT_TEMPLATE.description,
                mimeType: 'application/json',
              },
            ]
          : [],
    };
  });
  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
    const ctx = contextOf(extra);
    const uri = request.params.uri;
    const ui = UI_RESOURCES.find((r) => r.uri === uri);
    if (ui) {
      if (!ui.tools.some((t) => readable([t], ctx) === null))
        throw new McpError(ErrorCode.InvalidRequest, readable(ui.tools.slice(0, 1), ctx)!);
      return { contents: [{ uri, mimeType: RESOURCE_MIME_TYPE, text: uiPage(ui) }] };
    }
    const account = /^offer:\/\/accounts\/(.+)$/.exec(uri);
    const def = RESOURCES.find((r) => r.uri === uri);
    if (!def && !account) throw new McpError(ErrorCode.InvalidParams, `Unknown resource ${uri}`);
    const tools = def ? def.tools : ACCOUNT_TEMPLATE.tools;
    const reason = readable(tools, ctx);
    if (reason) throw new McpError(ErrorCode.InvalidRequest, reason);
    let data: unknown;
    try {
      if (def) data = await def.read(ctx, {});
      else {
        const id = decodeComponent(account![1]);
        if (id === null || id.includes('\u0000'))
          throw new McpError(ErrorCode.InvalidParams, `Unknown resource ${uri}`);
        const args = { [MCP_ACCOUNT_ARG]: id };
        const [detail, access, usage] = [
          await viaTool('get_account', args, ctx),
          await viaTool('get_account_access', args, ctx),
          await viaTool('get_account_usage', args, ctx),
        ];
        data = { account: detail, access, usage };
      }
    } catch (err) {
      if (err instanceof AppError) throw new McpError(ErrorCode.InvalidParams, `Error ${err.status}: ${err.message}`);
      throw err;
    }
    return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(data) }] };
  });

  server.setRequestHandler(ListPromptsRequestSchema, async () => ({
    prompts: PROMPTS.map((p) => ({ name: p.name, title: p.title, description: p.description, arguments: p.arguments })),
  }));
  server.setRequestHandler(GetPromptRequestSchema, async (request) => {
    const prompt = PROMPTS.find((p) => p.name === request.params.name);
    if (!prompt) throw new McpError(ErrorCode.InvalidParams, `Unknown prompt ${request.params.name}`);
    const args = request.params.arguments ?? {};
    const missing = prompt.arguments.find((a) => a.required && !args[a.name]);
    if (missing) throw new McpError(ErrorCode.InvalidParams, `Missing argument ${missing.name}`);
    return { description: prompt.description, messages: [promptMessage(prompt.name, args)] };
  });
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
 * schema has checked the message; `callToolJson` builds the result), and the result is serialized once.
 */
export async function answerPlainCall(messages: JSONRPCMessage[], ctx: McpRequestContext): Promise<string | null> {
  if (messages.length !== 1 || !plainToolCall(messages[0])) return null;
  const m = messages[0];
  const p = m.params as { name: string; arguments?: Record<string, unknown> };
  const id = JSON.stringify(m.id);
  try {
    return `{"jsonrpc":"2.0","id":${id},"result":${await callToolJson(p.name, p.arguments ?? {}, ctx)}}`;
  } catch (err) {
    if (!(err instanceof McpError)) ctx.deps.logger.error({ err, requestId: ctx.requestId }, 'MCP tools/call failed');
    return rpcErrorJson(id, err);
  }
}

/** Answers a request's JSON-RPC messages (already checked as such) in the request's context. */
export async function dispatch(messages: JSONRPCMessage[], ctx: McpRequestContext): Promise<JSONRPCMessage[]> {
  shared ??= (async () => {
    const transport = new LoopbackTransport();
    await buildMcpServer().connect(transport);
    return transport;
  })();
  const transport = await shared;
  const extra = { authInfo: { token: '', clientId: '', scopes: [], extra: { mcp: ctx } } };
  // The common case, a plain `tools/call`, is answered here: the SDK would parse the request and our own result
  // with its schemas again (the route's schema has checked the message; `callTool` builds the result). Anything
  // else (task-augmented calls, malformed params, every other method) goes through the SDK's server.
  if (messages.length === 1 && plainToolCall(messages[0])) {
    const m = messages[0];
    const p = m.params as { name: string; arguments?: Record<string, unknown> };
    try {
      return [{ jsonrpc: '2.0', id: m.id, result: await callTool(p.name, p.arguments ?? {}, ctx) }];
    } catch (err) {
      if (err instanceof McpError)
        return [{ jsonrpc: '2.0', id: m.id, error: { code: err.code, message: err.message } }];
      ctx.deps.logger.error({ err, requestId: ctx.requestId }, 'MCP tools/call failed');
      return [{ jsonrpc: '2.0', id: m.id, error: { code: ErrorCode.InternalError, message: 'Internal error' } }];
    }
  }
  // Params a method's request schema refuses are JSON-RPC's -32602 (the SDK would answer -32603, an internal error,
  // for a request it could not parse), each under its own id; the rest go to the SDK's server.
  const refused = messages.map(invalidParams);
  const answers = await transport.deliver(
    messages.filter((_, i) => !refused[i]),
    extra,
  );
  return messages.flatMap((m, i) => refused[i] ?? (isRequest(m) ? [answers.shift()!] : []));
}

/** The SDK's request schema of each method this server answers. */
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
        error: { code: ErrorCode.InvalidRequest, message: `Invalid Request: ${issue.message}${keys}` },
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
        code: ErrorCode.InvalidParams,
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
