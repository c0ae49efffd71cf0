import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
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

/** One MCP server for one request (stateless): the lists depend only on the app's settings and the caller. */
export function buildMcpServer(ctx: McpRequestContext): Server {
  const server = new Server(
    { name: 'offerkit', title: `offerkit: ${ctx.app.name}`, version },
    {
      capabilities: {
        tools: { listChanged: false },
        resources: { listChanged: false },
        prompts: { listChanged: false },
      },
      instructions: INSTRUCTIONS,
    },
  );

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: ctx.tools
      .filter((t) => denial(t, ctx.settings, ctx.level) === null)
      .map((t) => ({
        name: t.name,
        title: t.title,
        description: t.description,
        inputSchema: t.inputSchema,
        outputSchema: t.outputSchema,
        annotations: t.annotations,
      })),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const started = performance.now();
    const name = request.params.name;
    const args = (request.params.arguments ?? {}) as Record<string, unknown>;
    const tool = toolNamed(ctx, name);
    let outcome: Outcome;
    if (!tool) outcome = { status: 404, isError: true, text: `Error 404: Unknown tool ${name}` };
    else {
      const reason = denial(tool, ctx.settings, ctx.level);
      outcome = reason ? { status: 403, isError: true, text: `Error 403: ${reason}` } : await runTool(tool, args, ctx);
    }
    await logCall(ctx.deps.orm.em.fork(), {
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
  });

  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: RESOURCES.filter((r) => readable(r.tools, ctx) === null).map((r) => ({
      uri: r.uri,
      name: r.name,
      description: r.description,
      mimeType: 'application/json',
    })),
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
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
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const uri = request.params.uri;
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
