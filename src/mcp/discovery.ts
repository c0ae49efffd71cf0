import { uiMetaOf } from './apps.js';
import { ERROR_BRANCH } from './output-schemas.js';
import { refusal, type McpRequestContext, type Outcome } from './run-tool.js';
import { denial, type Tool } from './tools.js';
import { listedUnder, TOOLSET_ABOUT, TOOLSETS, type Toolset } from './toolsets.js';

/**
 * The two tools always listed, whatever the toolsets (src/mcp/toolsets.ts): `find_tools` describes the tools the
 * caller may call, listed or not (in full: title, description, input and output schemas, annotations), and
 * `call_tool` calls one that is not listed. Hosts let a model call only the tools `tools/list` named, so a tool
 * left out of the list would be lost to a model without `call_tool`; a client that can call any name (the SDK
 * clients) calls the tool itself (`tools/call`, with `find_tools`'s definition as `toolDefinition`).
 */

export const FIND_TOOLS = 'find_tools';
export const CALL_TOOL = 'call_tool';

/** What `tools/list` says of a tool: everything but what only the server uses. */
export function listEntry(t: Tool) {
  const ui = uiMetaOf(t.name);
  return {
    name: t.name,
    title: t.title,
    description: t.description,
    inputSchema: t.inputSchema,
    outputSchema: t.outputSchema,
    annotations: t.annotations,
    // The MCP App page that shows the tool's result (src/mcp/apps.ts), for hosts that support MCP Apps.
    ...(ui ? { _meta: ui } : {}),
  };
}

/** At most this many tools are described per `find_tools` call (their schemas are long). */
const MAX_FOUND = 8;

const toolsetsList = TOOLSETS.join(', ');

/** The definitions of the discovery tools, as `tools/list` gives them. */
export const DISCOVERY_TOOLS = [
  {
    name: FIND_TOOLS,
    title: 'Find tools',
    description:
      'Describes the tools you may call that are not in your tool list, in full (what they do, their arguments and ' +
      'answers). With no argument, answers every toolset and the names and titles of its tools. With `query` ' +
      `(words, e.g. "delete plan", "webhook deliveries"), \`toolset\` (${toolsetsList}) or \`names\`, answers up ` +
      `to ${MAX_FOUND} tools' definitions. Call a tool it describes with call_tool.`,
    inputSchema: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'Words to look for in tool names and descriptions, e.g. "refund".' },
        toolset: { type: 'string', enum: [...TOOLSETS], description: 'Only the tools of this toolset, e.g. catalog.' },
        names: {
          type: 'array',
          items: { type: 'string' },
          description: 'Tool names to describe, e.g. ["delete_plan"]. Omitted: found by query or toolset.',
        },
      },
      additionalProperties: false,
    },
    outputSchema: {
      type: 'object',
      anyOf: [
        {
          properties: {
            tools: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  name: { type: 'string' },
                  title: { type: 'string' },
                  toolset: { type: 'string' },
                  listed: { type: 'boolean' },
                  description: { type: 'string' },
                  inputSchema: { type: 'object' },
                  outputSchema: { type: 'object' },
                  annotations: { type: 'object' },
                },
                required: ['name', 'title', 'toolset', 'listed', 'description', 'inputSchema', 'annotations'],
              },
            },
            more: { type: 'integer' },
          },
          required: ['tools', 'more'],
        },
        {
          properties: {
            toolsets: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  name: { type: 'string' },
                  about: { type: 'string' },
                  listed: { type: 'boolean' },
                  tools: { type: 'array', items: { type: 'string' } },
                },
                required: ['name', 'about', 'listed', 'tools'],
              },
            },
          },
          required: ['toolsets'],
        },
        ERROR_BRANCH,
      ],
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  {
    name: CALL_TOOL,
    title: 'Call a tool',
    description:
      'Calls a tool that is not in your tool list (find_tools describes it) with its arguments, exactly as calling ' +
      'it directly: the same checks, errors, dry_run and confirmation. Example: { "name": "delete_plan", ' +
      '"arguments": { "planId": "old" } }. Answers that tool\'s result.',
    inputSchema: {
      type: 'object',
      properties: {
        name: { type: 'string', description: 'The tool to call, e.g. "list_webhooks".' },
        arguments: { type: 'object', description: 'Its arguments, as find_tools describes them. Omitted: none.' },
      },
      required: ['name'],
      additionalProperties: false,
    },
    // Whatever the tool called does: a host that asks the person by these hints asks for every call through here.
    annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true },
  },
] as const;

/**
 * The discovery tools as a caller sees them: for a caller who may call only read tools (a Read only connection),
 * call_tool reads too, and says so.
 */
export function discoveryTools(readsOnly: boolean) {
  if (!readsOnly) return DISCOVERY_TOOLS;
  return DISCOVERY_TOOLS.map((t) =>
    t.name === CALL_TOOL ? { ...t, annotations: { readOnlyHint: true, openWorldHint: false } } : t,
  );
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** The tool a `call_tool` call names, with its arguments; or why it names none (a 400 or 404 for the model). */
export function proxied(args: Record<string, unknown>, ctx: McpRequestContext) {
  const unknown = Object.keys(args).filter((k) => k !== 'name' && k !== 'arguments');
  if (unknown.length)
    return refusal(
      400,
      `Unknown argument ${unknown.map((k) => `\`${k}\``).join(', ')}: call_tool takes \`name\`, \`arguments\``,
    );
  if (typeof args.name !== 'string') return refusal(400, 'name: is required (the tool to call, e.g. "list_plans")');
  if (args.arguments !== undefined && !isPlainObject(args.arguments))
    return refusal(400, 'arguments: expected an object of the tool\'s arguments, e.g. { "planId": "pro" }');
  if (args.name === CALL_TOOL) return refusal(400, 'name: call_tool calls another tool, not itself');
  if (args.name !== FIND_TOOLS && !ctx.tools.some((t) => t.name === args.name))
    return refusal(404, `Unknown tool ${args.name}: find_tools names the tools you may call`);
  return { name: args.name, args: (args.arguments ?? {}) as Record<string, unknown> };
}

/** The tools the caller may call, each with whether `tools/list` names it. */
const permitted = (ctx: McpRequestContext) => ctx.tools.filter((t) => denial(t, ctx.settings, ctx.level) === null);

/** How well a tool matches a query's words: a word in its name counts most, then its title, then its description. */
function score(t: Tool, words: string[]) {
  const name = t.name.replace(/_/g, ' ');
  const title = t.title.toLowerCase();
  const about = `${t.description} ${t.toolset}`.toLowerCase();
  return words.reduce(
    (sum, w) => sum + (name.includes(w) ? 4 : 0) + (title.includes(w) ? 2 : 0) + (about.includes(w) ? 1 : 0),
    0,
  );
}

/** `find_tools`: the toolsets and their tools, or the full definitions of the tools asked for. */
export function findTools(args: Record<string, unknown>, ctx: McpRequestContext): Outcome {
  const unknown = Object.keys(args).filter((k) => !['query', 'toolset', 'names'].includes(k));
  if (unknown.length)
    return refusal(
      400,
      `Unknown argument ${unknown.map((k) => `\`${k}\``).join(', ')}: find_tools takes \`query\`, \`toolset\`, \`names\``,
    );
  const { query, toolset, names } = args;
  if (query !== undefined && typeof query !== 'string') return refusal(400, 'query: expected a string of words');
  if (toolset !== undefined && !TOOLSETS.includes(toolset as Toolset))
    return refusal(400, `toolset: expected one of ${toolsetsList}`);
  if (names !== undefined && (!Array.isArray(names) || names.some((n) => typeof n !== 'string')))
    return refusal(400, 'names: expected a list of tool names, e.g. ["delete_plan"]');
  const mine = permitted(ctx);
  const listed = (t: Tool) => listedUnder(ctx.toolsets, t);

  let structured: Record<string, unknown>;
  if (query === undefined && toolset === undefined && names === undefined) {
    structured = {
      toolsets: TOOLSETS.map((set) => ({
        name: set,
        about: TOOLSET_ABOUT[set],
        listed: ctx.toolsets.includes(set) || ctx.toolsets.includes('all'),
        tools: mine.filter((t) => t.toolset === set).map((t) => `${t.name}: ${t.title}`),
      })).filter((s) => s.tools.length),
    };
  } else {
    let found = mine.filter((t) => toolset === undefined || t.toolset === toolset);
    if (names !== undefined) {
      const asked = names as string[];
      const missing = asked.filter((n) => !found.some((t) => t.name === n));
      if (missing.length)
        return refusal(
          404,
          `No tool you may call is named ${missing.join(', ')}` +
            (toolset === undefined ? '' : ` in toolset ${String(toolset)}`) +
            ': find_tools with no argument names them all',
        );
      found = found.filter((t) => asked.includes(t.name));
    }
    const words = (query ?? '')
      .toLowerCase()
      .split(/[^a-z0-9-]+/)
      .filter(Boolean)
      .map((w) => (w.length > 3 ? w.replace(/s$/, '') : w));
    if (words.length)
      found = found
        .map((t) => ({ t, s: score(t, words) }))
        .filter((x) => x.s > 0)
        .sort((a, b) => b.s - a.s)
        .map((x) => x.t);
    structured = {
      tools: found.slice(0, MAX_FOUND).map((t) => ({ ...listEntry(t), toolset: t.toolset, listed: listed(t) })),
      more: Math.max(0, found.length - MAX_FOUND),
    };
  }
  const text = JSON.stringify(structured);
  return { status: 200, isError: false, text, structured, structuredJson: text };
}
