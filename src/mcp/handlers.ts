import {
  ProtocolError,
  ProtocolErrorCode,
  type CacheHint,
  type CallToolResult,
  type ListToolsResult,
  type Server,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { AppError } from '../errors.js';
import { decodeComponent } from '../http/validate.js';
import { MCP_ACCOUNT_ARG } from '../http/route.js';
import { logCall } from './calls.js';
import { RESOURCE_MIME_TYPE, UI_RESOURCE_META, UI_RESOURCES, uiPage } from './apps.js';
import { CALL_TOOL, discoveryTools, FIND_TOOLS, findTools, listEntry, proxied } from './discovery.js';
import { PROMPTS, promptMessage } from './prompts.js';
import { denial } from './tools.js';
import { listedUnder } from './toolsets.js';
import { refusal, runTool, type McpRequestContext, type Outcome } from './run-tool.js';
import { callAsTask, declaresTasks, taskKindOf } from './tasks.js';
import { PACKAGE_VERSION } from '../root.js';

/**
 * What the MCP server answers, method by method, the same in both protocol eras: the handlers both the process's
 * shared 2025-era server (src/mcp/legacy.ts) and each 2026-07-28 request's server (src/mcp/modern.ts) register.
 */

export const version = PACKAGE_VERSION;

export const INSTRUCTIONS =
  'This server manages one app of offerkit: its catalog (plans, entitlements, add-ons, incentives), accounts, usage, ' +
  'analytics, webhooks and events. Read the catalog first (the offer://catalog resource, or list_plans, ' +
  'list_entitlements, ' +
  'list_addons and list_incentives) so you use existing ids. Before creating, changing or deleting anything, tell ' +
  'the user ' +
  'exactly what you are about to do and wait for their confirmation. The account id is the argument namespaceId in ' +
  'every tool (the REST paths call it accountId). ' +
  'Every write tool takes dry_run: true, which answers what the call would do (its result or its refusal) and does nothing.';

export const CAPABILITIES = {
  tools: { listChanged: false },
  resources: { listChanged: false },
  prompts: { listChanged: false },
};

/** The server's identity, with the app's name as its title. */
export const serverInfo = (appName: string) => ({ name: 'offerkit', title: `offerkit: ${appName}`, version });

const MINUTE = 60_000;
/**
 * How long a 2026-07-28 client may keep a list (`ttlMs`, `cacheScope`), by how often it changes. The tool list
 * (and the resources, which follow the tools they read) depends on the caller: the app's MCP switches and access
 * level and, for an OAuth connection, its own level. Each changes when an operator changes it, so a minute, and
 * private (never shared between callers). A call is checked when it is made whatever the client kept. The prompts
 * are the same for every caller and change only with a release; so is `server/discover`'s answer for an app.
 */
export const CACHE_HINTS: Partial<Record<string, CacheHint>> = {
  'tools/list': { ttlMs: MINUTE, cacheScope: 'private' },
  'resources/list': { ttlMs: MINUTE, cacheScope: 'private' },
  'resources/templates/list': { ttlMs: MINUTE, cacheScope: 'private' },
  'prompts/list': { ttlMs: 60 * MINUTE, cacheScope: 'public' },
  'server/discover': { ttlMs: 10 * MINUTE, cacheScope: 'public' },
  // Data the tools change (the catalog, events, an account) is read fresh; an MCP App page changes with a release.
  'resources/read': { ttlMs: 0, cacheScope: 'private' },
};
/** An MCP App page (`ui://`): the same for every caller who may read it, changed only by a release. */
const UI_PAGE_HINT = { ttlMs: 60 * MINUTE, cacheScope: 'private' as const };

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
export async function callTool(
  name: string,
  args: Record<string, unknown>,
  ctx: McpRequestContext,
): Promise<CallToolResult> {
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
  new ProtocolError(
    ProtocolErrorCode.InvalidParams,
    `Unknown tool: ${name} (find_tools names the tools this connection can call)`,
  );

/** A JSON-RPC error answer, as text, for a request the plain path answers. */
const rpcErrorJson = (id: string, err: unknown) =>
  err instanceof ProtocolError
    ? `{"jsonrpc":"2.0","id":${id},"error":{"code":${err.code},"message":${JSON.stringify(err.message)}}}`
    : `{"jsonrpc":"2.0","id":${id},"error":{"code":${ProtocolErrorCode.InternalError},"message":"Internal error"}}`;

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

/**
 * The answer to a plain `tools/call` request (id, name, arguments) as JSON-RPC text, without the SDK: the route's
 * schema has checked the message and `callToolJson` builds the result, serialized once (src/mcp/legacy.ts).
 */
export async function plainCallJson(
  id: string | number,
  name: string,
  args: Record<string, unknown>,
  ctx: McpRequestContext,
): Promise<string> {
  const rid = JSON.stringify(id);
  try {
    return `{"jsonrpc":"2.0","id":${rid},"result":${await callToolJson(name, args, ctx)}}`;
  } catch (err) {
    if (!(err instanceof ProtocolError))
      ctx.deps.logger.error({ err, requestId: ctx.requestId }, 'MCP tools/call failed');
    return rpcErrorJson(rid, err);
  }
}

/** A tool call's outcome (the route's answer, or the refusal), logged. */
async function toolOutcome(
  name: string,
  args: Record<string, unknown>,
  ctx: McpRequestContext,
  start?: Parameters<typeof runTool>[3],
): Promise<Outcome> {
  // call_tool is the tool it names (its checks, caps, dry run and log line), or its refusal.
  if (name === CALL_TOOL) {
    const inner = proxied(args, ctx);
    if ('name' in inner) return toolOutcome(inner.name, inner.args, ctx, start);
    return logged(name, args, ctx, performance.now(), inner);
  }
  const started = performance.now();
  if (name === FIND_TOOLS) return logged(name, args, ctx, started, findTools(args, ctx));
  const tool = toolNamed(ctx, name);
  let outcome: Outcome;
  if (!tool) outcome = refusal(404, `Unknown tool ${name}`);
  else {
    const reason = denial(tool, ctx.settings, ctx.level);
    outcome = reason ? refusal(403, reason) : await runTool(tool, args, ctx, start);
  }
  logged(name, args, ctx, started, outcome);
  if (!tool) throw unknownTool(name);
  return outcome;
}

/** Logs a call (an agent calling a tool that is not there is worth an operator's look too). */
function logged(
  name: string,
  args: Record<string, unknown>,
  ctx: McpRequestContext,
  started: number,
  outcome: Outcome,
) {
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
  return outcome;
}

/**
 * What the handlers need of where they run: the request's context, and for a 2026-07-28 server the answer to a
 * `tools/call` that must ask the person first (src/mcp/confirm.ts), or null to call the tool.
 */
export interface HandlerSetup {
  contextOf(handler: ServerContext): McpRequestContext;
  modern?: {
    beforeCall(
      name: string,
      args: Record<string, unknown>,
      ctx: McpRequestContext,
      handler: ServerContext,
    ): Promise<Record<string, unknown> | null>;
  };
}

/** Registers the server's methods (tools, resources, prompts) on an SDK server. */
export function registerHandlers(server: Server, { contextOf, modern }: HandlerSetup): void {
  server.setRequestHandler('tools/list', async (_request, extra) => {
    const ctx = contextOf(extra);
    // The discovery tools, then the core tools and those of the chosen toolsets the caller may call
    // (src/mcp/toolsets.ts): the others stay callable, and find_tools describes them.
    const permitted = ctx.tools.filter((t) => denial(t, ctx.settings, ctx.level) === null);
    return {
      tools: [
        ...discoveryTools(permitted.every((t) => t.annotations.readOnlyHint === true)),
        ...permitted.filter((t) => listedUnder(ctx.toolsets, t)).map(listEntry),
      ] as ListToolsResult['tools'],
    };
  });

  server.setRequestHandler('tools/call', async (request, extra) => {
    const ctx = contextOf(extra);
    const { name } = request.params;
    const args = (request.params.arguments ?? {}) as Record<string, unknown>;
    // A call through call_tool asks the person first as the tool it calls would.
    const inner = name === CALL_TOOL ? proxied(args, ctx) : null;
    const [askName, askArgs] = inner && 'name' in inner ? [inner.name, inner.args] : [name, args];
    const asked = modern ? await modern.beforeCall(askName, askArgs, ctx, extra) : null;
    if (asked) return asked as CallToolResult;
    // 2026-07-28 with the Tasks extension declared: a tool whose outcome waits answers as a task (src/mcp/tasks.ts).
    const kind = modern && askArgs.dry_run !== true && declaresTasks(extra) ? taskKindOf(askName) : null;
    if (kind)
      return (await callAsTask(askName, kind, askArgs, ctx, () =>
        toolOutcome(name, args, ctx, kind.start),
      )) as unknown as CallToolResult;
    return await callTool(name, args, ctx);
  });

  server.setRequestHandler('resources/list', async (_request, extra) => {
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
          // Each with its CSP and permissions (`_meta.ui`), which hosts read from resources/read first.
          UI_RESOURCES.filter((r) => r.tools.some((t) => readable([t], ctx) === null)).map((r) => ({
            uri: r.uri,
            name: r.name,
            title: r.title,
            description: r.description,
            mimeType: RESOURCE_MIME_TYPE,
            _meta: UI_RESOURCE_META,
          })),
        ),
    };
  });
  server.setRequestHandler('resources/templates/list', async (_request, extra) => {
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
  server.setRequestHandler('resources/read', async (request, extra) => {
    const ctx = contextOf(extra);
    const uri = request.params.uri;
    // SEP-2164: a URI that is no resource is -32602 with the URI in `data`.
    const notFound = () => new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown resource ${uri}`, { uri });
    const ui = UI_RESOURCES.find((r) => r.uri === uri);
    if (ui) {
      if (!ui.tools.some((t) => readable([t], ctx) === null))
        throw new ProtocolError(ProtocolErrorCode.InvalidRequest, readable(ui.tools.slice(0, 1), ctx)!);
      return {
        contents: [{ uri, mimeType: RESOURCE_MIME_TYPE, text: uiPage(ui), _meta: UI_RESOURCE_META }],
        ...(modern ? UI_PAGE_HINT : {}),
      };
    }
    const account = /^offer:\/\/accounts\/(.+)$/.exec(uri);
    const def = RESOURCES.find((r) => r.uri === uri);
    if (!def && !account) throw notFound();
    const tools = def ? def.tools : ACCOUNT_TEMPLATE.tools;
    const reason = readable(tools, ctx);
    if (reason) throw new ProtocolError(ProtocolErrorCode.InvalidRequest, reason);
    let data: unknown;
    try {
      if (def) data = await def.read(ctx, {});
      else {
        const id = decodeComponent(account![1]);
        if (id === null || id.includes('\u0000')) throw notFound();
        const args = { [MCP_ACCOUNT_ARG]: id };
        const [detail, access, usage] = [
          await viaTool('get_account', args, ctx),
          await viaTool('get_account_access', args, ctx),
          await viaTool('get_account_usage', args, ctx),
        ];
        data = { account: detail, access, usage };
      }
    } catch (err) {
      if (err instanceof AppError)
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Error ${err.status}: ${err.message}`, { uri });
      throw err;
    }
    return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(data) }] };
  });

  server.setRequestHandler('prompts/list', async () => ({
    prompts: PROMPTS.map((p) => ({
      name: p.name,
      title: p.title,
      description: p.description,
      arguments: [...p.arguments],
    })),
  }));
  server.setRequestHandler('prompts/get', async (request) => {
    const prompt = PROMPTS.find((p) => p.name === request.params.name);
    if (!prompt) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown prompt ${request.params.name}`);
    const args = request.params.arguments ?? {};
    const missing = prompt.arguments.find((a) => a.required && !args[a.name]);
    if (missing) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Missing argument ${missing.name}`);
    return { description: prompt.description, messages: [promptMessage(prompt.name, args)] };
  });
}
