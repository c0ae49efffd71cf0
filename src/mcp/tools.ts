import { z } from 'zod';
import type { Deps } from '../deps.js';
import type { IApp } from '../apps/apps.entities.js';
import { AppError } from '../http/errors.js';
import { checkAnswer } from '../http/contract.js';
import type { McpTool, RouteDef } from '../http/route.js';
import { runRoute } from '../http/router.js';
import type { Level } from './mcp.entities.js';
import { covers, type McpSettingsView } from './settings.js';

const LEVEL: Record<McpTool['level'], Level> = { R: 'read', W: 'write', F: 'full' };

/** Path parameters are named as in the route, except the account id, which tools call `namespaceId`. */
const argName = (param: string) => (param === 'accountId' ? 'namespaceId' : param);

type JsonSchema = Record<string, unknown> & {
  properties?: Record<string, unknown>;
  required?: string[];
  $defs?: Record<string, unknown>;
};

function toJson(schema: z.ZodType): JsonSchema {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, {
    io: 'input',
    target: 'draft-2020-12',
    unrepresentable: 'any',
  }) as JsonSchema;
  return rest;
}

const shapeOf = (schema: z.ZodType | undefined) =>
  (schema as unknown as { shape?: Record<string, z.ZodType> } | undefined)?.shape;

export interface ToolResult {
  status: number;
  isError: boolean;
  text: string;
}

export interface ToolCallContext {
  deps: Deps;
  app: IApp;
  requestId: string;
  origin: string;
}

export interface Tool {
  name: string;
  title: string;
  level: Level;
  route: RouteDef;
  description: string;
  inputSchema: {
    type: 'object';
    properties: Record<string, unknown>;
    required?: string[];
    $defs?: Record<string, unknown>;
  };
  annotations: {
    title: string;
    readOnlyHint: boolean;
    destructiveHint: boolean;
    idempotentHint: boolean;
    openWorldHint: boolean;
  };
  /** Runs the route's own handler (through runRoute) and returns its JSON, redacted, or the error. */
  call(args: Record<string, unknown>, ctx: ToolCallContext): Promise<{ status: number; body: unknown }>;
}

function redact(value: unknown, keys: string[]): unknown {
  if (Array.isArray(value)) return value.map((v) => redact(v, keys));
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [
        k,
        keys.includes(k) && typeof v === 'string' ? '[redacted]' : redact(v, keys),
      ]),
    );
  }
  return value;
}

/** The tool a route declares (`mcp` on the route): the route's own schemas become its input. */
function deriveTool(def: RouteDef, spec: McpTool, routes: readonly RouteDef[]): Tool {
  if (!def.path.startsWith('/apps/:appId'))
    throw new Error(`MCP tool ${spec.tool}: ${def.method} ${def.path} is not a route of an app`);
  const fullPath = def.path;
  const level = LEVEL[spec.level];
  const omit = new Set(spec.omit ?? []);
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  const $defs: Record<string, unknown> = {};
  const add = (json: JsonSchema, keep: (name: string) => boolean, rename: (name: string) => string = (n) => n) => {
    Object.assign($defs, json.$defs ?? {});
    for (const [name, prop] of Object.entries(json.properties ?? {})) {
      if (!keep(name)) continue;
      properties[rename(name)] = prop;
      if (json.required?.includes(name)) required.push(rename(name));
    }
  };

  const pathParams = (fullPath.match(/:(\w+)/g) ?? []).map((m) => m.slice(1)).filter((p) => p !== 'appId');
  const paramsJson = def.params ? toJson(def.params) : { properties: {} };
  for (const p of pathParams) {
    properties[argName(p)] = paramsJson.properties?.[p] ?? { type: 'string' };
    required.push(argName(p));
  }
  const queryKeys = Object.keys(shapeOf(def.query) ?? {}).filter((k) => !omit.has(k));
  if (def.query) add(toJson(def.query), (n) => queryKeys.includes(n));

  let bodyKeys: string[] = [];
  if (def.body && spec.bodyArg) {
    const { $defs: inner, ...bodySchema } = toJson(def.body);
    Object.assign($defs, inner ?? {});
    properties[spec.bodyArg] = bodySchema;
    required.push(spec.bodyArg);
  } else if (def.body) {
    const shape = shapeOf(def.body);
    if (!shape) throw new Error(`MCP tool ${spec.tool}: the body of ${def.method} ${def.path} is not an object`);
    bodyKeys = Object.keys(shape).filter((k) => !omit.has(k) && (!spec.only || spec.only.includes(k)));
    add(toJson(def.body), (n) => bodyKeys.includes(n));
  }

  const title = spec.tool
    .split('_')
    .map((w, i) => (i === 0 ? w[0].toUpperCase() + w.slice(1) : w))
    .join(' ');
  const description = [def.summary, def.description, `Wraps ${def.method} ${def.path}.`].filter(Boolean).join(' ');
  return {
    name: spec.tool,
    title,
    level,
    route: def,
    description,
    inputSchema: {
      type: 'object',
      properties,
      ...(required.length ? { required } : {}),
      ...(Object.keys($defs).length ? { $defs } : {}),
    },
    annotations: {
      title,
      readOnlyHint: def.method === 'GET',
      destructiveHint: def.method === 'DELETE',
      idempotentHint: def.method === 'GET' || def.method === 'DELETE',
      openWorldHint: spec.openWorld === true,
    },
    async call(args, ctx) {
      const params: Record<string, string> = { appId: ctx.app.id };
      for (const p of pathParams) {
        const v = args[argName(p)];
        if (typeof v !== 'string' && typeof v !== 'number') throw new AppError(400, `${argName(p)}: is required`);
        params[p] = String(v);
      }
      // Query values travel as strings, exactly as they would in a URL.
      const query: Record<string, string> = {};
      for (const k of queryKeys) if (args[k] !== undefined && args[k] !== null) query[k] = String(args[k]);
      const body = spec.bodyArg
        ? args[spec.bodyArg]
        : Object.fromEntries(bodyKeys.filter((k) => args[k] !== undefined).map((k) => [k, args[k]]));
      const reply = await runRoute(
        def,
        { params, query, body, credential: ctx.app.apiKey, requestId: ctx.requestId, origin: ctx.origin, routes },
        ctx.deps,
      );
      if (ctx.deps.config.NODE_ENV === 'test')
        checkAnswer(def, ctx.requestId, `MCP tool ${spec.tool} (${def.method} ${def.path})`, {
          status: reply.status,
          contentType: reply.contentType ?? 'application/json',
          body: reply.body,
        });
      return { status: reply.status, body: spec.redact ? redact(reply.body, spec.redact) : reply.body };
    },
  };
}

const derived = new WeakMap<readonly RouteDef[], Tool[]>();

/** The tools of a route table: one per route that declares `mcp`, in table order (derived once per table). */
export function toolsOf(routes: readonly RouteDef[]): Tool[] {
  let tools = derived.get(routes);
  if (!tools) {
    tools = routes.filter((r) => r.mcp).map((r) => deriveTool(r, r.mcp!, routes));
    const names = tools.map((t) => t.name);
    const twice = names.find((n, i) => names.indexOf(n) !== i);
    if (twice) throw new Error(`MCP tool ${twice} is declared on two routes`);
    derived.set(routes, tools);
  }
  return tools;
}

/** Whether a tool is switched on for the app's OAuth connections: its override, else the app's access level. */
export const switchedOn = (tool: Tool, settings: McpSettingsView) =>
  settings.tool_overrides[tool.name] ?? covers(settings.access_level, tool.level);

/** Why a connection may not call a tool, or null when it may. Keys (secret, admin) may call everything. */
export function denial(tool: Tool, settings: McpSettingsView, level: Level | null): string | null {
  if (level === null) return null;
  if (!switchedOn(tool, settings)) return `Tool ${tool.name} is switched off for this app's MCP connections`;
  if (!covers(level, tool.level))
    return `Connection level too low: ${tool.name} needs ${tool.level} access, this connection has ${level}`;
  return null;
}
