// How a route's zod schemas become a tool's JSON Schema: the account id named `namespaceId`, a schema a model reads
// kept short (patterns and huge bounds left to the description), a body field's description for its own door (create
// or update), and long enums left out.
import { z } from 'zod';
import { MCP_ACCOUNT_ARG } from '../http/route.js';

/**
 * The account id is `namespaceId` in every tool (the spec's MCP rule 4 and its tool table,
 * `/namespaces/:namespaceId`); the other path parameters keep the route's names (`planId`, `entitlementId`, ...).
 */
export const PATH_ARGS: Record<string, string> = { accountId: MCP_ACCOUNT_ARG };
export const argName = (param: string) => PATH_ARGS[param] ?? param;

export type JsonSchema = Record<string, unknown> & {
  properties?: Record<string, unknown>;
  required?: string[];
  $defs?: Record<string, unknown>;
};

export function toJson(schema: z.ZodType): JsonSchema {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, {
    io: 'input',
    target: 'draft-07',
    unrepresentable: 'any',
  }) as JsonSchema;
  return rest;
}

/**
 * The schema a model reads, kept short: patterns (the id and URL rules, up to 222 characters each) and bounds
 * no model needs (2^53 - 1) are left out, the field's description says the rule instead, and the service still
 * checks every rule (a 400 names the field). `nullable` unions of one plain type become a type list.
 */
export const isEmptyObject = (v: unknown) =>
  !!v && typeof v === 'object' && !Array.isArray(v) && !Object.keys(v).length;

export function forModel(node: unknown): unknown {
  if (Array.isArray(node)) return node.map((n) => forModel(n));
  if (!node || typeof node !== 'object') return node;
  const src = node as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(src)) {
    if (k === 'pattern' || k === 'format' || k === 'propertyNames') continue;
    // `false` is the service's check to make; `{}` (anything) is what JSON Schema assumes unsaid.
    if (k === 'additionalProperties' && (typeof v === 'boolean' || isEmptyObject(v))) continue;
    if ((k === 'maxLength' && Number(v) >= 200) || (k === 'minLength' && v === 1) || (k === 'minItems' && v === 1))
      continue;
    if ((k === 'maximum' || k === 'minimum') && typeof v === 'number' && Math.abs(v) >= Number.MAX_SAFE_INTEGER)
      continue;
    if (k === 'properties' && v && typeof v === 'object')
      out[k] = Object.fromEntries(Object.entries(v).map(([name, p]) => [name, forModel(p)]));
    else if (k === 'items' || k === 'additionalProperties') out[k] = forModel(v);
    else if (k === 'anyOf' || k === 'oneOf') out[k] = (v as unknown[]).map((n) => forModel(n));
    else out[k] = v;
  }
  // A value the description says what happens without (`Omitted: ...`) needs no `default` beside it.
  if ('default' in out && typeof out.description === 'string' && /Omitted/.test(out.description)) delete out.default;
  const unionKey = out.anyOf ? 'anyOf' : 'oneOf';
  const union = out[unionKey] as Record<string, unknown>[] | undefined;
  if (union?.length === 2 && Object.keys(out).every((k) => k === unionKey || k === 'description' || k === 'default')) {
    const nul = union.findIndex((u) => u.type === 'null' && Object.keys(u).length === 1);
    const other = union[1 - nul];
    if (nul >= 0 && typeof other.type === 'string') {
      const { [unionKey]: _union, ...restOut } = out;
      const { type, ...restOther } = other;
      return { ...restOut, ...restOther, type: [type, 'null'] };
    }
  }
  return out;
}

/**
 * A body field's description speaks of both doors (`Omitted: none on create, unchanged on update.`, `Required on
 * create.`), as the schema is shared by the create and update routes: a tool is one of them, so it reads only its
 * half (nested fields too).
 */
export function forTool(node: unknown, method: string): unknown {
  if (Array.isArray(node)) return node.map((n) => forTool(n, method));
  if (!node || typeof node !== 'object') return node;
  const update = method === 'PATCH' || method === 'PUT';
  return Object.fromEntries(
    Object.entries(node).map(([k, v]) => [
      k,
      k === 'description' && typeof v === 'string'
        ? v
            .replace(/(Omitted(?: or null)?): (.+?) on create, (.+?) on update/, (_m, lead, create, upd) =>
              method === 'POST' ? `${lead}: ${create}` : update ? `${lead}: ${upd}` : _m,
            )
            // The tool's `required` says it: the sentence is for REST readers of the shared schema.
            .replace(/ ?Required on create\./, '')
            .trim()
        : forTool(v, method),
    ]),
  );
}

export const shapeOf = (schema: z.ZodType | undefined) =>
  (schema as unknown as { shape?: Record<string, z.ZodType> } | undefined)?.shape;

/**
 * A long list of allowed values (the 26 event types) is left out of the tools: the description names an example,
 * and the service's 400 names the field and lists the values (tools/list stays small).
 */
export function withoutLongEnums(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(withoutLongEnums);
  if (!node || typeof node !== 'object') return;
  const n = node as Record<string, unknown>;
  if (Array.isArray(n.enum) && n.enum.length > 12) delete n.enum;
  Object.values(n).forEach(withoutLongEnums);
}
