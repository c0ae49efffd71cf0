import { z } from 'zod';
import type { RouteDef } from '../http/route.js';
import { limitReachedSchema } from '../usage/upgrade.js';

type Json = Record<string, unknown>;

/**
 * What a cap refusal carries (src/mcp/guardrails.ts): the cap, what is used and left, what the call asked for, when
 * it resets and who raises it. `used`, `left` and `requested` are null when a spend in another currency could not be
 * counted.
 */
const capReachedSchema = z.object({
  cap: z.object({
    kind: z.enum(['spend', 'usage']),
    amount: z.number(),
    period: z.enum(['day', 'month']),
    currency: z.string().optional(),
    entitlement_id: z.string().optional(),
  }),
  used: z.number().nullable(),
  left: z.number().nullable(),
  requested: z.number().nullable(),
  resets_at: z.string().optional(),
  currency: z.string().optional(),
  raise: z.object({ who: z.string(), console: z.string(), api: z.string() }),
});

/**
 * A tool error's structured content: the route's error body (`error`, and what it adds: a 409's `reason`, a 503's
 * `outcome`, a cap's `cap_reached`) with the HTTP status the route answered.
 */
export const toolErrorSchema = z.object({
  error: z.string(),
  status: z.number().int(),
  reason: z.string().optional(),
  outcome: z.literal('unknown').optional(),
  retry_after: z.number().int().optional(),
  cap_reached: capReachedSchema.optional(),
});
export type ToolError = z.input<typeof toolErrorSchema>;

/**
 * A dry run's structured content: `would` succeed (the would-be `result`), fail (the refusal as `error`) or `call`
 * (a call that reaches outside offerkit, described and quoted).
 */
export const dryRunSchema = z.object({
  dry_run: z.object({
    would: z.enum(['succeed', 'fail', 'call']),
    status: z.number().int().optional(),
    /** The answer the call would give (this tool's answer, as its first branch types it). */
    result: z.record(z.string(), z.unknown()).nullable().optional(),
    /** The refusal the call would meet (this tool's error, as its error branch types it). */
    error: z.looseObject({ error: z.string(), status: z.number().int() }).optional(),
    description: z.string().optional(),
    amount: z.number().optional(),
    currency: z.string().optional(),
  }),
});

/** At most this many allowed values are listed in an output schema (the 26 event types are a string). */
const MAX_ENUM = 12;

const JSON_VALUE = { type: ['string', 'number', 'boolean', 'object', 'array', 'null'] };

const mapValues = (o: unknown, f: (v: unknown) => unknown) =>
  Object.fromEntries(Object.entries(o as Json).map(([k, v]) => [k, f(v)]));

/**
 * An output schema node typed to its fields: types, properties, `required`, items, unions, short enums and
 * constants. Descriptions, bounds, patterns and formats are the input's business (the values are the service's
 * own). A value JSON Schema says nothing about (`z.unknown()`) is typed as any JSON value, so no field is `{}`.
 */
export function typed(node: unknown): Json {
  if (!node || typeof node !== 'object') return { ...JSON_VALUE };
  const out: Json = {};
  for (const [k, v] of Object.entries(node as Json)) {
    if (k === 'type' || k === 'const') out[k] = v;
    else if (k === 'required' && Array.isArray(v) && v.length) out[k] = v;
    else if (k === 'enum' && Array.isArray(v) && v.length <= MAX_ENUM) out[k] = v;
    else if (k === 'properties') out[k] = mapValues(v, typed);
    else if (k === 'items') out[k] = typed(v);
    else if (k === 'anyOf' || k === 'oneOf') out.anyOf = (v as unknown[]).map(typed);
    // A map's values (plan meta: any JSON), typed where the map says what they are.
    else if (k === 'additionalProperties' && v && typeof v === 'object' && Object.keys(v).length) out[k] = typed(v);
  }
  // `X or null` of one typed X: a type list (its enum admits null too).
  const union = out.anyOf as Json[] | undefined;
  if (union?.length === 2 && Object.keys(out).length === 1) {
    const nul = union.findIndex((u) => u.type === 'null' && Object.keys(u).length === 1);
    const other = union[1 - nul];
    if (nul >= 0 && typeof other.type === 'string' && !other.anyOf)
      return {
        ...other,
        type: [other.type, 'null'],
        ...(Array.isArray(other.enum) ? { enum: [...(other.enum as unknown[]), null] } : {}),
      };
  }
  if (out.type === undefined && out.anyOf === undefined && out.const === undefined && out.enum === undefined)
    return { ...JSON_VALUE, ...out };
  return out;
}

const jsonOf = (schema: z.ZodType): Json => {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, {
    io: 'output',
    target: 'draft-07',
    unrepresentable: 'any',
  }) as Json;
  return rest;
};

/** A branch of a tool's output schema: the root says `type: object` once for all of them. */
const branch = (node: Json): Json => {
  const { type: _object, ...rest } = node;
  return rest;
};

export const ERROR_BRANCH = branch(typed(jsonOf(toolErrorSchema.omit({ cap_reached: true }))));
const CAPPED_ERROR_BRANCH = branch(typed(jsonOf(toolErrorSchema)));
const LIMIT_BRANCH = branch(typed(jsonOf(limitReachedSchema.extend({ status: z.literal(402) }))));
const DRY_RUN_BRANCH = branch(typed(jsonOf(dryRunSchema)));

export interface ToolOutput {
  /** The tool's output schema: `anyOf` its answer, the 402 body (usage tools), an error and a dry run (writes). */
  schema: { type: 'object'; anyOf: Json[] };
  /** Whether the route's answer is given under `data` (MCP's structured content is an object; a list is not). */
  wrap: boolean;
}

/**
 * A tool's output schema, from its route's response schema, typed to its fields, with every other structured
 * content the tool answers: the 402 body where the route has one, a refusal (`{ error, status }`, with `cap_reached`
 * on a tool that caps count) and, for a write tool, a dry run. MCP clients check structured content against it
 * (the SDK's client does, errors included).
 */
export function outputOf(def: RouteDef, opts: { writes: boolean; capped: boolean }): ToolOutput {
  if (!def.response) throw new Error(`MCP tool on ${def.method} ${def.path}: the route has no response schema`);
  const full = jsonOf(def.response);
  const wrap = full.type !== 'object';
  const success = wrap ? { properties: { data: typed(full) }, required: ['data'] } : branch(typed(full));
  const anyOf = [
    success,
    ...(def.errors?.includes(402) ? [LIMIT_BRANCH] : []),
    opts.capped ? CAPPED_ERROR_BRANCH : ERROR_BRANCH,
    ...(opts.writes ? [DRY_RUN_BRANCH] : []),
  ];
  return { schema: { type: 'object', anyOf }, wrap };
}
