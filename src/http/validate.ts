import { z } from 'zod';
import { badRequest } from '../errors.js';

/**
 * JSON nesting allowed in a request body (objects and arrays, the outermost one counting 1). Deeper input is a
 * 400 before anything else runs, so nothing (the NUL scan, validation, JSON.stringify when storing, webhook
 * receivers later) ever walks an unbounded structure.
 */
export const MAX_JSON_DEPTH = 64;

/** First zod issue as `<field>: <message>`, the convention for every 400 from validation. */
export function describeIssue(issue: z.core.$ZodIssue, root: string): string {
  const field = issue.path.length ? issue.path.map(String).join('.') : root;
  let message = issue.message;
  if (issue.code === 'invalid_type' && /received undefined$/.test(issue.message)) message = 'is required';
  if (issue.code === 'unrecognized_keys')
    message = `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => k.replaceAll('\u0000', '\\u0000')).join(', ')}`;
  return `${field}: ${message}`;
}

/**
 * The deepest nesting of arrays and objects in JSON text, counted without parsing: a single pass that stops as
 * soon as `max` is passed (strings, escapes included, are skipped). Invalid JSON is left to the parser.
 */
export function jsonDepthExceeds(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** The nesting depth of a parsed value, stopping as soon as `max` is passed (so it never recurses further). */
export function depthExceeds(value: unknown, max: number, depth = 0): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (depth + 1 > max) return true;
  for (const v of Array.isArray(value) ? value : Object.values(value)) if (depthExceeds(v, max, depth + 1)) return true;
  return false;
}

/** The path of the first string (or key) holding a NUL character, which PostgreSQL text cannot store. */
function nulAt(value: unknown, path: string[]): string[] | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path : null;
  // Bodies are depth-checked before this runs; this bound keeps any other caller (MCP tool arguments) safe too.
  if (path.length > MAX_JSON_DEPTH) throw badRequest(`${path.join('.')}: nested deeper than ${MAX_JSON_DEPTH} levels`);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nulAt(value[i], [...path, String(i)]);
      if (found) return found;
    }
    return null;
  }
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k.includes('\u0000')) return [...path, k.replaceAll('\u0000', '\\u0000')];
      const found = nulAt(v, [...path, k]);
      if (found) return found;
    }
  }
  return null;
}

/** A UTF-16 code unit of a surrogate pair without its other half. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
/** A JSON escape of a surrogate (`\ud800`), the only way UTF-8 JSON text can spell a lone one. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/** A key as a message can show it: each lone surrogate as its escape (the message itself stays valid text). */
const showKey = (key: string) =>
  key.replace(LONE_SURROGATE, (c) => `\\u${c.charCodeAt(0).toString(16)}`).replaceAll('\u0000', '\\u0000');

/**
 * The dotted path (`plans.0.name`, '' for the value itself) of the first string or object key in `value` that is not
 * valid Unicode text, or null when every one is. Such a string holds a lone surrogate (JSON's `"\ud800"`), which
 * PostgreSQL refuses in `jsonb` (a 500 when an event or a stored document carries it) and the driver silently turns
 * into U+FFFD in `text`. A bad key is named by its path with the surrogate escaped. Walks with its own stack, so any
 * nesting is safe. `raw`, the JSON text `value` was parsed from, lets a body without a surrogate escape (nearly all)
 * skip the walk: text decoded from UTF-8 cannot hold a lone surrogate except as an escape.
 */
export function illFormedPath(value: unknown, raw?: string): string | null {
  if (raw !== undefined && raw.isWellFormed() && !SURROGATE_ESCAPE.test(raw)) return null;
  interface Item {
    value: unknown;
    key: string | null;
    parent: Item | null;
  }
  const pathOf = (item: Item, key?: string) => {
    const parts = key === undefined ? [] : [key];
    for (let i: Item | null = item; i && i.key !== null; i = i.parent) parts.unshift(i.key);
    return parts.join('.');
  };
  const stack: Item[] = [{ value, key: null, parent: null }];
  while (stack.length) {
    const item = stack.pop()!;
    const v = item.value;
    if (typeof v === 'string') {
      if (!v.isWellFormed()) return pathOf(item);
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    // Pushed last to first, so the first bad string in the text is the one named.
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], key: String(i), parent: item });
      continue;
    }
    const keys = Object.keys(v);
    for (const k of keys) if (!k.isWellFormed()) return pathOf(item, showKey(k));
    for (let i = keys.length - 1; i >= 0; i--)
      stack.push({ value: (v as Record<string, unknown>)[keys[i]], key: keys[i], parent: item });
  }
  return null;
}

/** The 400 message for a value holding text that is not valid Unicode (see `illFormedPath`), or null. */
export function illFormedMessage(value: unknown, raw?: string, root = 'body'): string | null {
  const path = illFormedPath(value, raw);
  return path === null ? null : `${path || root}: must be valid Unicode text (lone surrogate)`;
}

/** Parses one part of the request; a failure is a 400 naming the field. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, root: string): z.output<S> {
  const nul = nulAt(value, []);
  if (nul) throw badRequest(`${nul.length ? nul.join('.') : root}: must not contain a NUL character`);
  const result = schema.safeParse(value);
  if (!result.success) throw badRequest(describeIssue(result.error.issues[0], root));
  return result.data;
}

/** decodeURIComponent that answers null for a malformed escape instead of throwing. */
export function decodeComponent(value: string): string | null {
  try {
    return decodeURIComponent(value);
  } catch {
    return null;
  }
}

type AnyDef = Record<string, unknown> & { type: string };
const strictCache = new WeakMap<z.ZodType, z.ZodType>();

/**
 * The same schema with every plain object strict (an unknown field is a 400 naming it, as Stripe answers, instead
 * of being dropped silently), nested ones included. Objects declared loose (`z.looseObject`: pricing cards, which
 * keep extra keys) and maps (`z.record`: plan meta) are left as they are. Bodies are made strict once, where the
 * route table is read (the router and the OpenAPI document), so every route's body follows the rule.
 */
export function strictBody<S extends z.ZodType>(schema: S): S {
  const cached = strictCache.get(schema);
  if (cached) return cached as S;
  const def = schema._zod.def as unknown as AnyDef;
  const inner = (key: string) => (def[key] ? { [key]: strictBody(def[key] as z.ZodType) } : {});
  let out: z.ZodType = schema;
  switch (def.type) {
    case 'object': {
      const shape = Object.fromEntries(
        Object.entries(def.shape as Record<string, z.ZodType>).map(([k, v]) => [k, strictBody(v)]),
      );
      out = schema.clone({ ...def, shape, catchall: def.catchall ?? z.never() } as never);
      break;
    }
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'nonoptional':
    case 'readonly':
    case 'catch':
      out = schema.clone({ ...def, ...inner('innerType') } as never);
      break;
    case 'array':
      out = schema.clone({ ...def, ...inner('element') } as never);
      break;
    case 'pipe':
      out = schema.clone({ ...def, ...inner('in') } as never);
      break;
    case 'intersection':
      out = schema.clone({ ...def, ...inner('left'), ...inner('right') } as never);
      break;
    case 'union':
      out = schema.clone({ ...def, options: (def.options as z.ZodType[]).map(strictBody) } as never);
      break;
  }
  // A clone is a new schema: its description and other metadata (the OpenAPI document's words) go with it.
  const meta = z.globalRegistry.get(schema);
  if (out !== schema && meta && !z.globalRegistry.has(out)) z.globalRegistry.add(out, meta);
  strictCache.set(schema, out);
  return out as S;
}
