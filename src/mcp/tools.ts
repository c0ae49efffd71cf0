import type { Deps } from '../deps.js';
import type { IApp } from '../apps/apps.entities.js';
import { AppError } from '../errors.js';
import { checkAnswer } from '../http/contract.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import { writes as isWrite } from '../http/guard.js';
import type { McpSpend, McpTool, RouteDef } from '../http/route.js';
import { runRoute } from '../http/router.js';
import { ctxOf, Reply } from '../http/route.js';
import { outputOf } from './output-schemas.js';
import type { Level } from './mcp.entities.js';
import { covers, type McpSettingsView } from './settings.js';
import { TOOL_INFO, type Toolset } from './toolsets.js';
import {
  JsonSchema,
  PATH_ARGS,
  argName,
  forModel,
  forTool,
  shapeOf,
  toJson,
  withoutLongEnums,
} from './tool-schemas.js';

const LEVEL: Record<McpTool['level'], Level> = { R: 'read', W: 'write', F: 'full' };
export interface ToolCallContext {
  deps: Deps;
  app: IApp;
  requestId: string;
  origin: string;
}

export interface Tool {
  name: string;
  /** A short name for people (MCP's `title`, shown by hosts), from src/mcp/toolsets.ts. */
  title: string;
  /** The toolset the tool is listed with (src/mcp/toolsets.ts). */
  toolset: Toolset;
  level: Level;
  route: RouteDef;
  description: string;
  inputSchema: {
    type: 'object';
    properties: Record<string, unknown>;
    required?: string[];
    additionalProperties: false;
    $defs?: Record<string, unknown>;
  };
  /**
   * Every structured content the tool answers, typed to its fields (src/mcp/output-schemas.ts): the route's answer
   * (a list under `data`), the 402 body where the route has one, a refusal, and a dry run for a write tool.
   */
  outputSchema: { type: 'object'; anyOf: Record<string, unknown>[] };
  /** The structured content of a successful result (the route's JSON, a list under `data`). */
  structured(body: unknown): Record<string, unknown> | undefined;
  annotations: {
    readOnlyHint?: boolean;
    destructiveHint?: boolean;
    idempotentHint?: boolean;
    openWorldHint: boolean;
  };
  /** Whether the tool changes something (it takes `dry_run`). */
  writes: boolean;
  /**
   * Why these arguments cannot make a call (an argument the tool does not take, a path parameter missing or not a
   * string, a query value that is not one), as the 400 the call answers; null when they can. The route checks the
   * rest and its 400 names the tool's argument.
   */
  argumentError(args: Record<string, unknown>): AppError | null;
  /** Money the call would start (a checkout or plan change; the route's error when it would fail); null: none. */
  spends(args: Record<string, unknown>, ctx: ToolCallContext): Promise<McpSpend | null>;
  /** Usage the call would record; null when none (or its input is not valid: the route answers the 400). */
  records(args: Record<string, unknown>): { entitlementId: string; amount: number } | null;
  /** Whether the call reaches outside the service (the payment provider, webhook URLs): a dry run only describes it. */
  reachesOut: boolean;
  /**
   * For a call that reaches outside, what it would do: the route's authentication, guards (the read-only demo's
   * 403), validation and lookups (a 404, a 409), then a description (and, for money, the quote) instead of the call.
   * Throws the route's error, naming the tool's arguments.
   */
  preview(args: Record<string, unknown>, ctx: ToolCallContext): Promise<Preview>;
  /**
   * Runs the route's own handler (through runRoute) and returns its JSON, redacted, or the error (naming the tool's
   * arguments); in `em` when given (a dry run's rolled-back transaction).
   */
  call(
    args: Record<string, unknown>,
    ctx: ToolCallContext,
    em?: EntityManager,
    /** Run in place of the route's handler, after its checks (an MCP task's start: src/mcp/task-kinds.ts). */
    handler?: Parameters<typeof runRoute>[1]['handler'],
  ): Promise<{ status: number; body: unknown }>;
}

/** What a dry run says of a call that reaches outside: a sentence, and the money it would start. */
export interface Preview {
  description: string;
  amount?: number;
  currency?: string;
}

/** The one description of `dry_run`, shared by every write tool (tools/list stays small). */
export const DRY_RUN_DESCRIPTION = 'If true, only preview.';

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

const list = (names: string[]) => names.map((n) => `\`${n}\``).join(', ');

/** The tool a route declares (`mcp` on the route): the route's own schemas become its input. */
function deriveTool(def: RouteDef, spec: McpTool, routes: readonly RouteDef[]): Tool {
  if (!def.path.startsWith('/apps/:appId'))
    throw new Error(`MCP tool ${spec.tool}: ${def.method} ${def.path} is not a route of an app`);
  // A read tool's call looks up no caps (src/mcp/run-tool.ts, `runTool`).
  if (def.method === 'GET' && (spec.spends || spec.records))
    throw new Error(`MCP tool ${spec.tool}: a GET route cannot spend or record usage`);
  // A dry run of a call that reaches outside checks what the route would refuse before describing it.
  if (spec.openWorld && !spec.spends && !spec.preview)
    throw new Error(`MCP tool ${spec.tool}: a tool that reaches outside needs a preview for its dry run`);
  const level = LEVEL[spec.level];
  const omit = new Set(spec.omit ?? []);
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  const $defs: Record<string, unknown> = {};
  /** The tool's argument for each of the route's field names (path, query, body), for its error messages. */
  const argOf = new Map<string, string>();
  const add = (json: JsonSchema, keep: (name: string) => boolean, rename: (name: string) => string = (n) => n) => {
    Object.assign($defs, json.$defs ?? {});
    for (const [name, prop] of Object.entries(json.properties ?? {})) {
      if (!keep(name)) continue;
      properties[rename(name)] = forTool(forModel(prop), def.method);
      argOf.set(name, rename(name));
      if (json.required?.includes(name)) required.push(rename(name));
    }
  };

  const pathParams = (def.path.match(/:(\w+)/g) ?? []).map((m) => m.slice(1)).filter((p) => p !== 'appId');
  const paramsJson = def.params ? toJson(def.params) : { properties: {} };
  for (const p of pathParams) {
    properties[argName(p)] = forModel(paramsJson.properties?.[p] ?? { type: 'string' });
    argOf.set(p, argName(p));
    required.push(argName(p));
  }
  const renamed = (n: string) => spec.rename?.[n] ?? n;
  const queryKeys = Object.keys(shapeOf(def.query) ?? {}).filter((k) => !omit.has(k));
  if (def.query) add(toJson(def.query), (n) => queryKeys.includes(n), renamed);

  let bodyKeys: string[] = [];
  if (def.body && spec.bodyArg) {
    const { $defs: inner, ...bodySchema } = toJson(def.body);
    Object.assign($defs, inner ?? {});
    properties[spec.bodyArg] = forModel(bodySchema);
    argOf.set('body', spec.bodyArg);
    required.push(spec.bodyArg);
  } else if (def.body) {
    const shape = shapeOf(def.body);
    if (!shape) throw new Error(`MCP tool ${spec.tool}: the body of ${def.method} ${def.path} is not an object`);
    bodyKeys = Object.keys(shape).filter((k) => !omit.has(k) && (!spec.only || spec.only.includes(k)));
    add(toJson(def.body), (n) => bodyKeys.includes(n), renamed);
  }
  if (isWrite(def)) properties.dry_run = { type: 'boolean', description: DRY_RUN_DESCRIPTION };
  const names = Object.keys(properties);
  for (const [from, to] of argOf) if (from !== to && names.includes(from)) argOf.delete(from);

  /**
   * A route's message in the tool's words: a message about a field (`id: is required`, `accountId: ...`,
   * `body.x: ...`) names the tool's argument (`entitlementId: is required`, `namespaceId: ...`, `meta.x: ...`).
   */
  const inToolWords = (message: string) => {
    const m = /^([A-Za-z_][\w]*)((?:[.[][^:\s]*)?): /.exec(message);
    if (!m) return message;
    const [whole, field, rest] = m;
    let arg = argOf.get(field);
    // A body taken whole from one argument (merge_plan_meta's `meta`): its fields are that argument's.
    if (!arg && spec.bodyArg && !pathParams.includes(field))
      arg = field === spec.bodyArg ? field : `${spec.bodyArg}.${field}`;
    return arg ? `${arg}${rest}: ${message.slice(whole.length)}` : message;
  };
  const reworded = (err: unknown) =>
    err instanceof AppError && err.status === 400 && inToolWords(err.message) !== err.message
      ? new AppError(err.status, inToolWords(err.message), err.extra, err.headers)
      : err;

  const argumentError = (args: Record<string, unknown>): AppError | null => {
    const unknown = Object.keys(args).filter((k) => !names.includes(k));
    if (unknown.length) {
      // A route's own name for an argument the tool names otherwise (`accountId`, a body's `id`): say which.
      const hints = unknown
        .map((k) => [k, argOf.get(k) ?? (PATH_ARGS[k] && names.includes(PATH_ARGS[k]) ? PATH_ARGS[k] : undefined)])
        .filter(([k, to]) => to !== undefined && to !== k)
        .map(([k, to]) => `\`${k}\` is \`${to}\` here`);
      return new AppError(
        400,
        `Unknown argument${unknown.length > 1 ? 's' : ''} ${list(unknown)}: ${spec.tool} ` +
          (names.length ? `takes ${list(names)}` : 'takes no arguments') +
          (hints.length ? ` (${hints.join('; ')})` : ''),
      );
    }
    for (const p of pathParams) {
      const v = args[argName(p)];
      if (v === undefined || v === null) return new AppError(400, `${argName(p)}: is required`);
      if (typeof v !== 'string' && typeof v !== 'number') return new AppError(400, `${argName(p)}: expected a string`);
    }
    for (const k of queryKeys) {
      const v = args[renamed(k)];
      if (v !== undefined && v !== null && !['string', 'number', 'boolean'].includes(typeof v))
        // A query value travels as text in the URL: a list or an object has no spelling there.
        return new AppError(
          400,
          `${renamed(k)}: expected a single value, not ${Array.isArray(v) ? 'a list' : 'an object'}`,
        );
    }
    return null;
  };

  /** The route's request from a tool's arguments: path parameters, query (as strings, as in a URL) and body. */
  const requestOf = (args: Record<string, unknown>, appId: string) => {
    const problem = argumentError(args);
    if (problem) throw problem;
    const params: Record<string, string> = { appId };
    for (const p of pathParams) params[p] = String(args[argName(p)]);
    const query: Record<string, string> = {};
    for (const k of queryKeys) {
      const v = args[renamed(k)];
      if (v !== undefined && v !== null) query[k] = String(v);
    }
    const body = spec.bodyArg
      ? args[spec.bodyArg]
      : Object.fromEntries(bodyKeys.filter((k) => args[renamed(k)] !== undefined).map((k) => [k, args[renamed(k)]]));
    return { params, query, body };
  };
  /** The parsed path parameters and body the route would get; null when they are not valid (the route says why). */
  const parsed = (args: Record<string, unknown>, ctx: ToolCallContext | null) => {
    let req: ReturnType<typeof requestOf>;
    try {
      // Without a call's context (the cap check before it runs), a stand-in app id the route's pattern takes.
      req = requestOf(args, ctx?.app.id ?? 'app_0');
    } catch {
      return null;
    }
    const params = def.params ? def.params.safeParse(req.params) : { success: true as const, data: req.params };
    const body = def.body ? def.body.safeParse(req.body ?? {}) : { success: true as const, data: {} };
    if (!params.success || !body.success) return null;
    return { params: params.data as Record<string, string>, body: body.data };
  };
  /** The route run for a tool call: as the app's own secret key, in `em` when given. */
  const run = async (
    args: Record<string, unknown>,
    ctx: ToolCallContext,
    extra: { em?: EntityManager; handler?: Parameters<typeof runRoute>[1]['handler'] } = {},
  ) => {
    const { params, query, body } = requestOf(args, ctx.app.id);
    return runRoute(
      def,
      {
        params,
        query,
        body,
        credential: ctx.app.apiKey,
        secretOf: ctx.app,
        requestId: ctx.requestId,
        origin: ctx.origin,
        routes,
        ...extra,
      },
      ctx.deps,
    ).catch((err: unknown) => {
      throw reworded(err);
    });
  };

  // A tool missing from the table (only the unit tests' own routes) is titled by its route's summary.
  const info = TOOL_INFO[spec.tool] ?? { toolset: 'app' as const, title: def.summary ?? spec.tool };
  const sentence = (t: string) => (/[.!?]$/.test(t.trim()) ? t.trim() : `${t.trim()}.`);
  const description = [def.summary, spec.about ?? def.description, spec.use]
    .filter((t): t is string => !!t)
    .map(sentence)
    .join(' ');
  // A POST that stores nothing (a quote, a preview) is a read: no dry_run, a read-only hint.
  const writes = isWrite(def);
  const output = outputOf(def, { writes, capped: !!(spec.spends || spec.records) });
  return {
    name: spec.tool,
    title: info.title,
    toolset: info.toolset,
    level,
    route: def,
    description,
    inputSchema: {
      type: 'object',
      properties,
      ...(required.length ? { required } : {}),
      additionalProperties: false,
      ...(Object.keys($defs).length ? { $defs: forModel($defs) as Record<string, unknown> } : {}),
    },
    outputSchema: output.schema,
    structured: (body) =>
      body === null || body === undefined
        ? undefined
        : output.wrap
          ? { data: body }
          : (body as Record<string, unknown>),
    // Hints at MCP's defaults (not read-only, destructive, not idempotent, open world) are sent only where they
    // differ, except `destructiveHint` on deletes; a read-only tool's destructive and idempotent hints mean nothing,
    // and `idempotentHint` is left at its default (tools/list stays small; nothing is claimed).
    annotations: !writes
      ? { readOnlyHint: true, openWorldHint: false }
      : { destructiveHint: def.method === 'DELETE', openWorldHint: spec.openWorld === true },
    writes,
    reachesOut: spec.openWorld === true || spec.spends !== undefined,
    argumentError,
    async spends(args, ctx) {
      if (!spec.spends) return null;
      const input = parsed(args, ctx);
      return input
        ? spec
            .spends({ em: ctx.deps.orm.em.fork(), deps: ctx.deps, app: ctx.app }, input.params, input.body)
            .catch((err: unknown) => {
              throw reworded(err);
            })
        : null;
    },
    records(args) {
      if (!spec.records) return null;
      const input = parsed(args, null);
      return input ? spec.records(input.params, input.body) : null;
    },
    async preview(args, ctx) {
      const reply = await run(args, ctx, {
        handler: async (s) => {
          const c = ctxOf(s);
          const quote = spec.spends
            ? await spec.spends(c, s.params, s.body)
            : { description: await spec.preview!(c, s.params, s.body) };
          return new Reply(200, quote);
        },
      });
      return reply.body as Preview;
    },
    async call(args, ctx, em, handler) {
      const reply = await run(args, ctx, { em, ...(handler ? { handler } : {}) });
      if (ctx.deps.config.NODE_ENV === 'test')
        checkAnswer(def, ctx.requestId, `MCP tool ${spec.tool} (${def.method} ${def.path})`, {
          status: reply.status,
          contentType: reply.contentType ?? 'application/json',
          body: reply.body,
        });
      // A tool never hands out a secret: the tool's own list and the fields the route keeps from people.
      const hidden = [...(spec.redact ?? []), ...(def.secretFields ?? [])];
      return { status: reply.status, body: hidden.length ? redact(reply.body, hidden) : reply.body };
    },
  };
}

/** A field description's `Omitted: ...` sentence, and the rest. */
const omittedOf = (d: string) => {
  const m = /(?:^|\s)(Omitted[^.]*(?:\([^)]*\))?\.)/.exec(d);
  return {
    omitted: m?.[1],
    rest: d
      .replace(m?.[1] ?? '\u0000', '')
      .replace(/ ?Required on create\./, '')
      .trim(),
  };
};

/**
 * An update tool's field that means what the create tool's does (the same description but for what leaving it
 * out does) is described once, in the create tool: the update tool's says `As in create_plan.` and what leaving
 * it out does, and keeps its type (its inner fields are the create tool's to name). tools/list stays small.
 */
function sameFields(tools: Tool[]) {
  for (const update of tools.filter((t) => t.name.startsWith('update_'))) {
    const create = tools.find((t) => t.name === update.name.replace(/^update_/, 'create_'));
    if (!create) continue;
    const props = update.inputSchema.properties as Record<string, Record<string, unknown>>;
    for (const [name, prop] of Object.entries(props)) {
      const twin = (create.inputSchema.properties as Record<string, Record<string, unknown>>)[name];
      if (!twin || name === 'dry_run' || typeof prop.description !== 'string' || typeof twin.description !== 'string')
        continue;
      const mine = omittedOf(prop.description);
      if (!mine.rest || mine.rest !== omittedOf(twin.description).rest) continue;
      // Left out of an update, a field stays as it is (whatever the create tool's default); null's meaning is kept.
      const omitted = /unchanged/.test(mine.omitted ?? '')
        ? mine.omitted
        : `Omitted: unchanged${/; null [^.]*/.exec(mine.omitted ?? '')?.[0] ?? ''}.`;
      props[name] = { type: prop.type, description: `As in ${create.name}. ${omitted}` };
    }
  }
}

const derived = new WeakMap<readonly RouteDef[], Tool[]>();

/** The tools of a route table: one per route that declares `mcp`, in table order (derived once per table). */
export function toolsOf(routes: readonly RouteDef[]): Tool[] {
  let tools = derived.get(routes);
  if (!tools) {
    tools = routes.filter((r) => r.mcp).map((r) => deriveTool(r, r.mcp!, routes));
    sameFields(tools);
    for (const t of tools) withoutLongEnums(t.inputSchema);
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

/**
 * The most an OAuth connection of the app can do: the highest level of a tool switched on for its connections (the
 * access level, or above it when a tool override switches on a higher tool). Consent, issued scopes and the
 * connection list never claim more.
 */
export function appCap(tools: Tool[], settings: McpSettingsView): Level {
  const on = tools.filter((t) => switchedOn(t, settings)).map((t) => t.level);
  return on.includes('full') ? 'full' : on.includes('write') ? 'write' : 'read';
}

/** The lower of two levels. */
export const lower = (a: Level, b: Level): Level => (covers(a, b) ? b : a);

/** Why a connection may not call a tool, or null when it may. Keys (secret, admin) may call everything. */
export function denial(tool: Tool, settings: McpSettingsView, level: Level | null): string | null {
  if (level === null) return null;
  if (!switchedOn(tool, settings)) return `Tool ${tool.name} is switched off for this app's MCP connections`;
  if (!covers(level, tool.level))
    return `Connection level too low: ${tool.name} needs ${tool.level} access, this connection has ${level}`;
  return null;
}
