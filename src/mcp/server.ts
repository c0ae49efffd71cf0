import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  InitializeRequestSchema,
  isJSONRPCRequest,
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
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { createRequire } from 'node:module';
import { AppError } from '../errors.js';
import { logCall } from './calls.js';
import type { Level } from './mcp.entities.js';
import { RESOURCE_MIME_TYPE, UI_RESOURCES, uiMetaOf, uiPage } from './apps.js';
import { PROMPTS, promptMessage } from './prompts.js';
import type { McpSettingsView } from './settings.js';
import { denial, type Tool, type ToolCallContext } from './tools.js';
import { decodeComponent } from '../http/validate.js';

const require = createRequire(import.meta.url);
const { version } = require('../../package.json') as { version: string };

export const INSTRUCTIONS =
  'This server manages one app of offerkit: its catalog (plans, entitlements, add-ons, incentives), accounts, usage, ' +
  'analytics, webhooks and events. Read the catalog first (the offer://catalog resource, or list_plans, ' +
  'list_entitlements, ' +
  'list_addons and list_incentives) so you use existing ids. Before creating, changing or deleting anything, tell ' +
  'the user ' +
  'exactly what you are about to do and wait for their confirmation. Account ids are called accountId, as in the REST paths.';

export interface McpRequestContext extends ToolCallContext {
  settings: McpSettingsView;
  /** The OAuth connection's level; null for the secret and admin keys (everything allowed). */
  level: Level | null;
  connectionId: string | null;
  /** The tools of the route table the request is served from. */
  tools: Tool[];
}

const toolNamed = (ctx: McpRequestContext, name: string) => ctx.tools.find((t) => t.name === name);

/**
 * A tool's outcome as the client sees it: the route's JSON as text and as `structuredContent`, or
 * `Error <status>: <message>`. An error whose body says more than its code (a 402's `message` names the upgrade
 * and its link) shows that message, and its whole body (offer, prices, `checkout_url`) is the structured content.
 */
export interface Outcome {
  status: number;
  isError: boolean;
  text: string;
  structured?: Record<string, unknown>;
}

async function runTool(tool: Tool, args: Record<string, unknown>, ctx: McpRequestContext): Promise<Outcome> {
  try {
    const { status, body } = await tool.call(args, ctx);
    const text = body === null || body === undefined ? '' : JSON.stringify(body);
    return { status, isError: false, text, structured: tool.structured(body) };
  } catch (err) {
    if (err instanceof AppError) {
      const detail = typeof err.extra?.message === 'string' ? err.extra.message : err.message;
      return {
        status: err.status,
        isError: true,
        text: `Error ${err.status}: ${detail}`,
        ...(err.status === 402 ? { structured: { error: err.message, ...err.extra } } : {}),
      };
    }
    ctx.deps.logger.error({ err, requestId: ctx.requestId, tool: tool.name }, 'MCP tool failed');
    return { status: 500, isError: true, text: 'Error 500: Internal server error' };
  }
}

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
  uriTemplate: 'offer://accounts/{accountId}',
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
  const started = performance.now();
  const tool = toolNamed(ctx, name);
  let outcome: Outcome;
  if (!tool) outcome = { status: 404, isError: true, text: `Error 404: Unknown tool ${name}` };
  else {
    const reason = denial(tool, ctx.settings, ctx.level);
    outcome = reason ? { status: 403, isError: true, text: `Error 403: ${reason}` } : await runTool(tool, args, ctx);
  }
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
  return {
    content: [{ type: 'text', text: outcome.text }],
    ...(outcome.structured ? { structuredContent: outcome.structured } : {}),
    isError: outcome.isError,
  };
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
          title: t.title,
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
        const accountId = decodeComponent(account![1]);
        if (accountId === null || accountId.includes('\u0000'))
          throw new McpError(ErrorCode.InvalidParams, `Unknown resource ${uri}`);
        const [detail, access, usage] = [
          await viaTool('get_account', { accountId }, ctx),
          await viaTool('get_account_access', { accountId }, ctx),
          await viaTool('get_account_usage', { accountId }, ctx),
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
      ctx.deps.logger.error({ err, requestId: ctx.requestId }, 'MCP tools/call failed');
      return [{ jsonrpc: '2.0', id: m.id, error: { code: ErrorCode.InternalError, message: 'Internal error' } }];
    }
  }
  return transport.deliver(messages, extra);
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** A `tools/call` request with a string name, object arguments (or none), and nothing else the SDK handles. */
function plainToolCall(m: JSONRPCMessage): m is JSONRPCMessage & { id: RequestId; params: Record<string, unknown> } {
  if (!isJSONRPCRequest(m) || m.method !== 'tools/call' || !isPlainObject(m.params)) return false;
  const { name, arguments: args, _meta, ...rest } = m.params;
  return (
    typeof name === 'string' &&
    (args === undefined || isPlainObject(args)) &&
    (_meta === undefined || isPlainObject(_meta)) &&
    Object.keys(rest).length === 0
  );
}
