import { z } from 'zod';
import type { Deps } from '../deps.js';
import type { IApp } from '../apps/apps.entities.js';
import { AppError } from '../http/errors.js';
import type { RouteDef } from '../http/route.js';
import { runRoute } from '../http/router.js';
import { routes } from '../http/routes.js';
import type { Level } from './mcp.entities.js';
import { covers, type McpSettingsView } from './settings.js';

/**
 * The spec's tool table: name, the route it wraps (relative to /apps/:appId, as declared in the route
 * table) and its level. Everything else (description, input schema, the call itself) is derived from
 * the route definition, so a tool never re-implements a route.
 */
interface ToolSpec {
  name: string;
  method: RouteDef['method'];
  path: string;
  level: 'R' | 'W' | 'F';
  /** Input fields left out (filters the tool does not offer, fields it may not change). */
  omit?: string[];
  /** Only these body fields are offered. */
  only?: string[];
  /** The whole body is taken from this argument (merge_plan_meta's `meta`). */
  bodyArg?: string;
  /** Keys redacted anywhere in the result. */
  redact?: string[];
  /** Calls URLs outside the service (webhook endpoints). */
  openWorld?: boolean;
}

const KEYS = ['api_key', 'public_key'];
const SECRETS = ['secret'];
const NS = '/namespaces/:accountId';
const CNT = `${NS}/usage/:entitlementId`;

const SPECS: ToolSpec[] = [
  // Accounts
  { name: 'list_accounts', method: 'GET', path: '/namespaces', level: 'R', omit: ['offer'] },
  { name: 'count_accounts', method: 'GET', path: '/namespaces/count', level: 'R' },
  { name: 'list_accounts_with_incentive', method: 'GET', path: '/namespaces/with-incentive', level: 'R' },
  { name: 'create_account', method: 'POST', path: '/namespaces', level: 'W' },
  { name: 'get_account', method: 'GET', path: NS, level: 'R' },
  { name: 'update_account', method: 'PATCH', path: NS, level: 'W' },
  { name: 'delete_account', method: 'DELETE', path: NS, level: 'F' },
  { name: 'remove_account_incentive', method: 'DELETE', path: `${NS}/incentive`, level: 'F' },
  { name: 'get_account_access', method: 'GET', path: `${NS}/plan`, level: 'R' },
  { name: 'get_account_access_private', method: 'GET', path: `${NS}/full-plan`, level: 'R' },
  // Usage
  { name: 'get_account_usage', method: 'GET', path: `${NS}/usage`, level: 'R' },
  { name: 'get_usage_count', method: 'GET', path: CNT, level: 'R' },
  { name: 'increment_usage', method: 'POST', path: `${CNT}/add`, level: 'W' },
  { name: 'decrement_usage', method: 'POST', path: `${CNT}/remove`, level: 'W' },
  { name: 'add_usage_amount', method: 'POST', path: `${CNT}/amount`, level: 'W' },
  // Plans and pricing
  { name: 'list_plans', method: 'GET', path: '/plans', level: 'R' },
  { name: 'create_plan', method: 'POST', path: '/plans', level: 'W' },
  { name: 'get_plan', method: 'GET', path: '/plans/:planId', level: 'R' },
  { name: 'update_plan', method: 'PATCH', path: '/plans/:planId', level: 'W' },
  { name: 'delete_plan', method: 'DELETE', path: '/plans/:planId', level: 'F' },
  { name: 'merge_plan_meta', method: 'PATCH', path: '/plans/:planId/meta', level: 'W', bodyArg: 'meta' },
  { name: 'list_plan_accounts', method: 'GET', path: '/plans/:planId/namespaces', level: 'R' },
  { name: 'attach_plan_entitlement', method: 'POST', path: '/plans/:planId/entitlements', level: 'W' },
  {
    name: 'set_plan_entitlement_limit',
    method: 'PATCH',
    path: '/plans/:planId/entitlements/:entitlementId',
    level: 'W',
  },
  { name: 'detach_plan_entitlement', method: 'DELETE', path: '/plans/:planId/entitlements/:entitlementId', level: 'F' },
  { name: 'attach_plan_addon', method: 'POST', path: '/plans/:planId/addons', level: 'W' },
  { name: 'detach_plan_addon', method: 'DELETE', path: '/plans/:planId/addons/:addonId', level: 'F' },
  { name: 'list_pricing_cards', method: 'GET', path: '/plans/pricing', level: 'R' },
  { name: 'get_pricing_card', method: 'GET', path: '/plans/:planId/pricing', level: 'R' },
  // Entitlements
  { name: 'list_entitlements', method: 'GET', path: '/entitlements', level: 'R' },
  { name: 'create_entitlement', method: 'POST', path: '/entitlements', level: 'W' },
  { name: 'get_entitlement', method: 'GET', path: '/entitlements/:entitlementId', level: 'R' },
  { name: 'update_entitlement', method: 'PATCH', path: '/entitlements/:entitlementId', level: 'W' },
  { name: 'delete_entitlement', method: 'DELETE', path: '/entitlements/:entitlementId', level: 'F' },
  // Add-ons
  { name: 'list_addons', method: 'GET', path: '/addons', level: 'R' },
  { name: 'create_addon', method: 'POST', path: '/addons', level: 'W' },
  { name: 'get_addon', method: 'GET', path: '/addons/:addonId', level: 'R' },
  { name: 'update_addon', method: 'PATCH', path: '/addons/:addonId', level: 'W' },
  { name: 'delete_addon', method: 'DELETE', path: '/addons/:addonId', level: 'F' },
  // Incentives
  { name: 'list_incentives', method: 'GET', path: '/incentives', level: 'R' },
  { name: 'create_incentive', method: 'POST', path: '/incentives', level: 'W' },
  { name: 'get_incentive', method: 'GET', path: '/incentives/:incentiveId', level: 'R' },
  { name: 'update_incentive', method: 'PATCH', path: '/incentives/:incentiveId', level: 'W' },
  { name: 'delete_incentive', method: 'DELETE', path: '/incentives/:incentiveId', level: 'F' },
  { name: 'attach_incentive_entitlement', method: 'POST', path: '/incentives/:incentiveId/entitlements', level: 'W' },
  {
    name: 'set_incentive_entitlement_limit',
    method: 'PATCH',
    path: '/incentives/:incentiveId/entitlements/:entitlementId',
    level: 'W',
  },
  {
    name: 'detach_incentive_entitlement',
    method: 'DELETE',
    path: '/incentives/:incentiveId/entitlements/:entitlementId',
    level: 'F',
  },
  { name: 'attach_incentive_addon', method: 'POST', path: '/incentives/:incentiveId/addons', level: 'W' },
  { name: 'detach_incentive_addon', method: 'DELETE', path: '/incentives/:incentiveId/addons/:addonId', level: 'F' },
  // Analytics
  { name: 'get_usage_summary', method: 'GET', path: '/analytics', level: 'R' },
  { name: 'top_accounts_by_usage', method: 'GET', path: '/analytics/top-namespaces', level: 'R' },
  { name: 'get_usage_timeseries', method: 'GET', path: '/analytics/timeseries', level: 'R' },
  { name: 'list_usage_events', method: 'GET', path: '/analytics/events', level: 'R' },
  // Webhooks and events
  { name: 'list_webhooks', method: 'GET', path: '/webhooks', level: 'R', redact: SECRETS },
  { name: 'create_webhook', method: 'POST', path: '/webhooks', level: 'W', redact: SECRETS },
  { name: 'get_webhook', method: 'GET', path: '/webhooks/:webhookId', level: 'R', redact: SECRETS },
  { name: 'update_webhook', method: 'PATCH', path: '/webhooks/:webhookId', level: 'W', redact: SECRETS },
  { name: 'delete_webhook', method: 'DELETE', path: '/webhooks/:webhookId', level: 'F', redact: SECRETS },
  {
    name: 'send_test_event',
    method: 'POST',
    path: '/webhooks/:webhookId/test',
    level: 'W',
    redact: SECRETS,
    openWorld: true,
  },
  {
    name: 'list_webhook_deliveries',
    method: 'GET',
    path: '/webhooks/:webhookId/deliveries',
    level: 'R',
    redact: SECRETS,
  },
  {
    name: 'retry_webhook_delivery',
    method: 'POST',
    path: '/webhooks/:webhookId/deliveries/:deliveryId/retry',
    level: 'W',
    redact: SECRETS,
    openWorld: true,
  },
  { name: 'list_events', method: 'GET', path: '/events', level: 'R' },
  // App
  { name: 'get_app', method: 'GET', path: '', level: 'R', redact: KEYS },
  { name: 'update_app', method: 'PATCH', path: '', level: 'W', only: ['name'], redact: KEYS },
];

const LEVEL: Record<ToolSpec['level'], Level> = { R: 'read', W: 'write', F: 'full' };

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

function deriveTool(spec: ToolSpec, table: RouteDef[]): Tool {
  const fullPath = `/apps/:appId${spec.path}`;
  const def = table.find((r) => r.method === spec.method && r.path === fullPath);
  if (!def) throw new Error(`MCP tool ${spec.name}: no route ${spec.method} ${fullPath} in the route table`);
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
    if (!shape) throw new Error(`MCP tool ${spec.name}: the body of ${def.method} ${def.path} is not an object`);
    bodyKeys = Object.keys(shape).filter((k) => !omit.has(k) && (!spec.only || spec.only.includes(k)));
    add(toJson(def.body), (n) => bodyKeys.includes(n));
  }

  const title = spec.name
    .split('_')
    .map((w, i) => (i === 0 ? w[0].toUpperCase() + w.slice(1) : w))
    .join(' ');
  const description = [def.summary, def.description, `Wraps ${def.method} ${def.path}.`].filter(Boolean).join(' ');
  return {
    name: spec.name,
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
      readOnlyHint: spec.method === 'GET',
      destructiveHint: spec.method === 'DELETE',
      idempotentHint: spec.method === 'GET' || spec.method === 'DELETE',
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
        { params, query, body, credential: ctx.app.apiKey, requestId: ctx.requestId, origin: ctx.origin },
        ctx.deps,
      );
      return { status: reply.status, body: spec.redact ? redact(reply.body, spec.redact) : reply.body };
    },
  };
}

let cached: Tool[] | undefined;

/** Every tool, derived once from the route table. */
export function allTools(): Tool[] {
  cached ??= SPECS.map((s) => deriveTool(s, routes));
  return cached;
}

export const toolByName = (name: string) => allTools().find((t) => t.name === name);
export const toolNames = () => new Set(allTools().map((t) => t.name));

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
