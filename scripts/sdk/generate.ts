// Generates the SDK's typed surface (packages/sdk/src/generated/) from the live route table: the OpenAPI document
// the service serves, typed by openapi-typescript, plus the operation table and resource interfaces the clients
// are built from. `npm run sdk:generate` writes the files; `--check` fails when the committed ones differ.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';
import * as prettier from 'prettier';
import { z } from 'zod';
import { CONFLICT_REASONS } from '../../src/errors.js';
import { EVENT_TYPES } from '../../src/events/event-types.js';
import { buildOpenApi } from '../../src/http/openapi.js';
import type { RouteDef } from '../../src/http/route.js';
import { routes as liveRoutes } from '../../src/routes.js';
import { CLOSED_FIELDS, SDK_EXCLUDED, SDK_MODELS } from './names.js';
import type { SdkCred, SdkOperation } from './operation.js';
import { generatePython } from './python.js';
import { eventDataSchemas, limitReachedBody } from './schemas.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const GENERATED_DIR = path.join(root, 'packages/sdk/src/generated');

const SDK_CREDS: SdkCred[] = ['S', 'P', 'T'];

export const routeKey = (r: Pick<RouteDef, 'method' | 'path'>) => `${r.method} ${r.path}`;

/** The SDK name of a route: its own `sdk` field (the route table is the one place names are declared). */
export function sdkName(r: RouteDef): string | undefined {
  return (r as Partial<RouteDef>).sdk || undefined;
}

/** Whether an app credential (secret key, publishable key, account token) may call the route. */
export const forAppCredentials = (r: RouteDef) => r.auth.some((c) => (SDK_CREDS as string[]).includes(c));

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, {
    io,
    target: 'draft-2020-12',
    unrepresentable: 'any',
  }) as Record<string, unknown>;
  return rest;
}

function requiredness(schema: z.ZodType | undefined): 'none' | 'optional' | 'required' {
  if (!schema) return 'none';
  const js = jsonSchema(schema, 'input') as { required?: string[] };
  return js.required?.length ? 'required' : 'optional';
}

/** How a list pages, from its query and response schemas (src/http/pagination.ts). */
function pagination(r: RouteDef): false | 'page' | 'cursor' {
  if (!r.query || !r.response) return false;
  const q = jsonSchema(r.query, 'input') as { properties?: Record<string, unknown> };
  const res = jsonSchema(r.response, 'output') as { properties?: Record<string, unknown> };
  const has = (o: { properties?: Record<string, unknown> }, keys: string[]) => keys.every((k) => !!o.properties?.[k]);
  if (has(q, ['page', 'per_page']) && has(res, ['data', 'total', 'page', 'per_page'])) return 'page';
  if (has(q, ['limit', 'cursor']) && has(res, ['data', 'next_cursor'])) return 'cursor';
  return false;
}

/** The operations the SDK offers, in route-table order. Throws when a route open to app credentials has no name. */
export function sdkOperations(routes: readonly RouteDef[]): SdkOperation[] {
  const ops: SdkOperation[] = [];
  const missing: string[] = [];
  const seen = new Map<string, string>();
  for (const r of routes) {
    if (!forAppCredentials(r) || SDK_EXCLUDED[routeKey(r)]) continue;
    const name = sdkName(r);
    if (!name) {
      missing.push(routeKey(r));
      continue;
    }
    if (!/^[a-z][A-Za-z0-9]*\.[a-z][A-Za-z0-9]*$/.test(name)) throw new Error(`SDK name ${name} is not ns.method`);
    if (seen.has(name)) throw new Error(`SDK name ${name} is used by ${seen.get(name)} and ${routeKey(r)}`);
    // Each method's documentation starts with a one-line summary (the route's own), then names the route.
    if (!r.summary?.trim() || /\n/.test(r.summary))
      throw new Error(`${routeKey(r)}: a one-line \`summary\` is required`);
    seen.set(name, routeKey(r));
    if (!/^\/apps\/:appId(\/|$)/.test(r.path)) throw new Error(`${routeKey(r)}: SDK routes live under /apps/:appId`);
    ops.push({
      route: r,
      key: routeKey(r),
      name,
      namespace: name.split('.')[0],
      method: r.method,
      path: r.path.replace(/:(\w+)/g, '{$1}'),
      pathParams: (r.path.match(/:(\w+)/g) ?? []).map((p) => p.slice(1)).filter((p) => p !== 'appId'),
      creds: SDK_CREDS.filter((c) => r.auth.includes(c)),
      body: requiredness(r.body),
      query: requiredness(r.query),
      paginated: pagination(r),
      status: r.status ?? 200,
    });
  }
  if (missing.length) {
    throw new Error(`SDK generator: name these routes (their \`sdk\` field):\n  ${missing.join('\n  ')}`);
  }
  return ops;
}

const pascal = (s: string) => s.replace(/(^|[._-])([a-z0-9])/g, (_m, _sep, c: string) => c.toUpperCase());
const typeBase = (op: SdkOperation) => pascal(op.name);
const doc = (lines: (string | undefined)[], indent = '') => {
  const text = lines
    .filter(Boolean)
    .join('\n\n')
    .replace(/\*\//g, '*\\/')
    .split('\n')
    .map((l) => `${indent} *${l ? ` ${l}` : ''}`)
    .join('\n');
  return `${indent}/**\n${text}\n${indent} */\n`;
};

function openApiDocument(routes: readonly RouteDef[], ops: SdkOperation[]) {
  const full = buildOpenApi(routes as RouteDef[], { version: 'sdk' }) as {
    paths: Record<string, Record<string, unknown>>;
    components: { schemas: Record<string, unknown> };
  };
  // Only what the SDK calls: admin-only and open routes stay out of the published types.
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of ops) {
    const m = op.method.toLowerCase();
    paths[op.path] ??= {};
    paths[op.path][m] = full.paths[op.path][m];
  }
  const events = eventDataSchemas(routes);
  const schemas: Record<string, unknown> = { ...full.components.schemas };
  schemas.LimitReachedBody = jsonSchema(limitReachedBody, 'output');
  for (const [type, schema] of Object.entries(events)) schemas[`EventData:${type}`] = jsonSchema(schema, 'output');
  return { ...full, paths, components: { ...full.components, schemas } };
}

function apiModule(ops: SdkOperation[]): string {
  const out: string[] = [];
  out.push(
    '// Generated by scripts/sdk/generate.ts from the route table and the event catalog. Do not edit.',
    "import type { RequestOptions } from '../core.js';",
    "import type { CursorPagePromise, PagePromise } from '../pagination.js';",
    "import type { APIPromise } from '../response.js';",
    "import type { components, paths } from './openapi.js';",
    '',
    '/** One SDK operation: how a method maps onto its route. */',
    'export interface Operation {',
    '  name: string;',
    "  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';",
    '  path: string;',
    '  /** Path parameters after the app id, in the order the method takes them. */',
    '  params: readonly string[];',
    '  body: boolean;',
    '  query: boolean;',
    '  /** A list: `page` (`page` / `per_page`) returns a PagePromise, `cursor` (`limit` / `cursor`) a CursorPagePromise. */',
    "  paginated: false | 'page' | 'cursor';",
    '  /** Credentials that may call it: S secret key, P publishable key, T account token. */',
    "  auth: readonly ('S' | 'P' | 'T')[];",
    '}',
    '',
    'export const OPERATIONS: readonly Operation[] = [',
  );
  for (const op of ops) {
    out.push(
      `  { name: '${op.name}', method: '${op.method}', path: '${op.path}', params: [${op.pathParams
        .map((p) => `'${p}'`)
        .join(
          ', ',
        )}], body: ${op.body !== 'none'}, query: ${op.query !== 'none'}, paginated: ${op.paginated ? `'${op.paginated}'` : 'false'}, ` +
        `auth: [${op.creds.map((c) => `'${c}'`).join(', ')}] },`,
    );
  }
  out.push('];', '');

  // Input and output types per operation.
  for (const op of ops) {
    const base = typeBase(op);
    const at = `paths['${op.path}']['${op.method.toLowerCase()}']`;
    if (op.body !== 'none')
      out.push(`export type ${base}Body = NonNullable<${at}['requestBody']>['content']['application/json'];`);
    if (op.query !== 'none') out.push(`export type ${base}Query = NonNullable<${at}['parameters']['query']>;`);
    out.push(
      `export type ${base}Response = ${
        op.route.response ? `${at}['responses'][${op.status}]['content']['application/json']` : 'unknown'
      };`,
    );
  }
  out.push('');
  const byName = new Map(ops.map((o) => [o.name, o]));
  for (const [model, name] of Object.entries(SDK_MODELS)) {
    const op = byName.get(name);
    if (!op) throw new Error(`SDK model ${model}: no operation ${name}`);
    out.push(`/** What \`${name}\` answers. */`, `export type ${model} = ${typeBase(op)}Response;`);
  }
  out.push(
    '',
    '/** The 402 body: the limit that would be passed and the upgrade offer to show (spec, Errors). */',
    "export type LimitReachedBody = components['schemas']['LimitReachedBody'];",
    '',
    '/**',
    " * Why a 409 was answered (`ConflictError.reason`, the body's `reason`): every reason the service's code gives a 409",
    ' * (src/errors.ts `CONFLICT_REASONS`). A 409 without a reason (an id that exists, a state that forbids the call) has',
    ' * none.',
    ' */',
    'export type ConflictReason =',
    ...Object.entries(CONFLICT_REASONS).map(([reason, about]) => doc([about], '  ') + `  | '${reason}'`),
    ';',
    '',
    '/** Every `ConflictReason`, in alphabetical order. */',
    `export const CONFLICT_REASONS: readonly ConflictReason[] = [${Object.keys(CONFLICT_REASONS)
      .map((r) => `'${r}'`)
      .join(', ')}];`,
    '',
  );

  // Resource interfaces: every operation of a namespace, then what each credential sees of it.
  const namespaces = [...new Set(ops.map((o) => o.namespace))];
  const ifaceName = (ns: string) => `${pascal(ns)}Api`;
  for (const ns of namespaces) {
    const mine = ops.filter((o) => o.namespace === ns);
    const prefixes = [...new Set(mine.map((o) => o.path.split('/').slice(0, 4).join('/')))];
    out.push(
      doc([`\`${ns}.*\`: the routes under ${prefixes.map((p) => `\`${p}\``).join(', ')}.`]) +
        `export interface ${ifaceName(ns)} {`,
    );
    for (const op of ops.filter((o) => o.namespace === ns)) {
      const base = typeBase(op);
      const args = op.pathParams.map((p) => `${p}: string`);
      if (op.body !== 'none') args.push(`body${op.body === 'optional' ? '?' : ''}: ${base}Body`);
      if (op.query !== 'none') args.push(`query${op.query === 'optional' ? '?' : ''}: ${base}Query`);
      args.push('options?: RequestOptions');
      const ret =
        op.paginated === 'page'
          ? `PagePromise<${base}Response>`
          : op.paginated === 'cursor'
            ? `CursorPagePromise<${base}Response>`
            : `APIPromise<${base}Response>`;
      const creds = op.creds.map((c) => ({ S: 'secret key', P: 'publishable key', T: 'account token' })[c]).join(', ');
      // The summary, then the route (so `accounts.create` reads as `POST /apps/{appId}/namespaces` in an editor's
      // hover), then the details.
      out.push(
        doc(
          [
            op.route.summary,
            `\`${op.method} ${op.path}\` (${creds})` +
              (op.paginated ? '. Await it for one page, or iterate it with `for await` for every item.' : ''),
            op.route.description,
          ],
          '  ',
        ) + `  ${op.name.split('.')[1]}(${args.join(', ')}): ${ret};`,
      );
    }
    out.push('}', '');
  }
  const credDoc: Record<SdkCred, string> = {
    S: 'What a secret key (`key_...`, server side) may call: every app route.',
    P: 'What a publishable key (`pub_...`, browser) may call: access reads, adding usage, pricing, checkouts.',
    T: "What an account token (`act_...`, browser) may call: its own account's reads and cancel sessions.",
  };
  const credIface: Record<SdkCred, string> = {
    S: 'SecretResources',
    P: 'PublishableResources',
    T: 'AccountTokenResources',
  };
  for (const c of SDK_CREDS) {
    out.push(doc([credDoc[c]]) + `export interface ${credIface[c]} {`);
    for (const ns of namespaces) {
      const mine = ops.filter((o) => o.namespace === ns && o.creds.includes(c));
      if (!mine.length) continue;
      const all = ops.filter((o) => o.namespace === ns);
      const type =
        mine.length === all.length
          ? ifaceName(ns)
          : `Pick<${ifaceName(ns)}, ${mine.map((o) => `'${o.name.split('.')[1]}'`).join(' | ')}>`;
      out.push(`  ${ns}: ${type};`);
    }
    out.push('}', '');
  }

  // Webhook events: a union discriminated by `type`.
  out.push(
    '/** `data` of each event type (spec, Events: event catalog). */',
    'export interface WebhookEventData {',
    ...EVENT_TYPES.map(
      (e) => doc([e.description], '  ') + `  '${e.type}': components['schemas']['EventData:${e.type}'];`,
    ),
    '}',
    '',
    'export type WebhookEventType = keyof WebhookEventData;',
    '',
    '/** Every event type the SDK knows, in catalog order. */',
    `export const WEBHOOK_EVENT_TYPES: readonly WebhookEventType[] = [${EVENT_TYPES.map((e) => `'${e.type}'`).join(
      ', ',
    )}];`,
    '',
    '/** The envelope of a delivery; `type` narrows `data`. */',
    'export type WebhookEvent = {',
    '  [K in WebhookEventType]: {',
    '    /** `evt_...`, also the `webhook-id` header; the same on every retry. */',
    '    id: string;',
    '    type: K;',
    '    created_at: string;',
    '    app_id: string;',
    '    data: WebhookEventData[K];',
    '    /** Present and true only on test sends. */',
    '    test?: true;',
    '  };',
    '}[WebhookEventType];',
    '',
    '/** The event of one type: `WebhookEventOf<"usage.limit_reached">`. */',
    'export type WebhookEventOf<K extends WebhookEventType> = Extract<WebhookEvent, { type: K }>;',
    '',
  );
  return out.join('\n');
}

async function format(text: string, file: string): Promise<string> {
  const options = (await prettier.resolveConfig(file)) ?? {};
  return prettier.format(text, { ...options, filepath: file });
}

/**
 * The document's recursive `JsonValue` schema becomes a named recursive type: TypeScript refuses an
 * interface member that refers to itself through an indexed access.
 */
function recursiveJson(ts: string): string {
  const ref = /components\[(['"])schemas\1\]\[\1JsonValue\1\]/g;
  if (!ref.test(ts)) return ts;
  return (
    ts.replace(ref, 'JsonValue') +
    '\n/** Any JSON value. */\n' +
    'export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };\n'
  );
}

type JsonSchemaNode = {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, JsonSchemaNode>;
  items?: JsonSchemaNode;
  anyOf?: JsonSchemaNode[];
  oneOf?: JsonSchemaNode[];
  allOf?: JsonSchemaNode[];
};

/**
 * Fields of the SDK's answers named like a closed set (`status`, `interval`, `direction` ... CLOSED_FIELDS) whose
 * schema is a plain string, as `<operation> <path>`: each must be a `z.enum` (or `z.literal`) in its zod schema, so
 * the type is the literal union the API documents.
 */
export function plainClosedFields(doc: {
  paths: Record<string, Record<string, { operationId?: string; responses?: Record<string, unknown> }>>;
  components: { schemas: Record<string, unknown> };
}): string[] {
  const found = new Set<string>();
  const schemas = doc.components.schemas as Record<string, JsonSchemaNode>;
  const plain = (s: JsonSchemaNode): boolean => {
    const r = s.$ref ? schemas[s.$ref.split('/').pop()!] : s;
    if (!r) return false;
    if (r.anyOf || r.oneOf) return (r.anyOf ?? r.oneOf)!.some(plain);
    const t = Array.isArray(r.type) ? r.type : [r.type];
    return t.includes('string') && r.enum === undefined && r.const === undefined;
  };
  const walk = (s: JsonSchemaNode | undefined, at: string, seen: Set<string>) => {
    if (!s) return;
    if (s.$ref) {
      const name = s.$ref.split('/').pop()!;
      if (seen.has(name)) return;
      return walk(schemas[name], at, new Set([...seen, name]));
    }
    for (const b of [...(s.anyOf ?? []), ...(s.oneOf ?? []), ...(s.allOf ?? [])]) walk(b, at, seen);
    if (s.items) walk(s.items, `${at}[]`, seen);
    for (const [k, v] of Object.entries(s.properties ?? {})) {
      if ((CLOSED_FIELDS as readonly string[]).includes(k) && plain(v)) found.add(`${at}.${k}`);
      walk(v, `${at}.${k}`, seen);
    }
  };
  for (const ops of Object.values(doc.paths))
    for (const op of Object.values(ops))
      for (const res of Object.values(op.responses ?? {})) {
        const schema = (res as { content?: Record<string, { schema?: JsonSchemaNode }> }).content?.['application/json']
          ?.schema;
        walk(schema, op.operationId ?? '?', new Set());
      }
  for (const [name, schema] of Object.entries(schemas))
    if (name.startsWith('EventData:')) walk(schema as JsonSchemaNode, name, new Set([name]));
  return [...found].sort();
}

/** The generated files (path relative to the repository, contents), from the given route table. */
export async function generateSdk(routes: readonly RouteDef[] = liveRoutes): Promise<Record<string, string>> {
  const ops = sdkOperations(routes);
  const missingEvents = EVENT_TYPES.map((e) => e.type).filter((t) => !eventDataSchemas(routes)[t]);
  if (missingEvents.length)
    throw new Error(`SDK generator: describe the data of ${missingEvents.join(', ')} in scripts/sdk/schemas.ts`);
  const document = openApiDocument(routes, ops);
  const loose = plainClosedFields(document as never);
  if (loose.length)
    throw new Error(
      'SDK generator: these answer fields name a closed set but their schema is a plain string; make each a ' +
        `z.enum (or z.literal) so the SDK types the values:\n  ${loose.join('\n  ')}`,
    );
  const ast = await openapiTS(document as never, { alphabetize: false });
  const header =
    '// Generated by scripts/sdk/generate.ts (openapi-typescript) from the OpenAPI document of the route table.\n' +
    '// Do not edit.\n';
  const files: Record<string, string> = {
    'packages/sdk/src/generated/openapi.ts': header + recursiveJson(astToString(ast)),
    'packages/sdk/src/generated/api.ts': apiModule(ops),
  };
  for (const [file, text] of Object.entries(files)) files[file] = await format(text, path.join(root, file));
  // The Python SDK, from the same operations (scripts/sdk/python.ts).
  return { ...files, ...generatePython(routes, ops) };
}

/** Files whose committed contents differ from what the generator makes now. */
export async function staleFiles(): Promise<string[]> {
  const files = await generateSdk();
  return Object.entries(files)
    .filter(([file, text]) => {
      const p = path.join(root, file);
      return !fs.existsSync(p) || fs.readFileSync(p, 'utf8') !== text;
    })
    .map(([file]) => file);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--check')) {
    const stale = await staleFiles();
    if (stale.length) {
      console.error(`Out of date (run npm run sdk:generate): ${stale.join(', ')}`);
      process.exit(1);
    }
    console.log('SDK up to date');
  } else {
    const files = await generateSdk();
    for (const [file, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
      fs.writeFileSync(path.join(root, file), text);
    }
    console.log(`Wrote ${Object.keys(files).join(', ')}`);
  }
  process.exit(0);
}
