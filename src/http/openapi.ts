import { z } from 'zod';
import type { Cred, RouteDef } from './route.js';
import { MAX_JSON_DEPTH, strictBody } from './validate.js';

const CREDENTIALS: Record<Cred, string> = {
  S: 'secret key (`key_...`)',
  P: 'publishable key (`pub_...`)',
  T: 'account token (`act_...`) for its own account',
  A: 'admin key only',
  N: 'no credential',
  O: 'MCP OAuth access token (`mcp_at_...`) of the app',
  C: "a person's console session (the HTTP-only cookie set by `POST /api/auth/sign-in/email`)",
};

const STATUS_TEXT: Record<number, string> = {
  400: 'Invalid JSON or an invalid field (`<field>: <message>`)',
  401: 'Missing or wrong credential, or one not allowed on this route',
  402: 'A blocking usage limit would be passed (limit_reached body)',
  403: 'Not allowed for this credential',
  404: 'A record in the path (or referenced by the body) does not exist',
  409: 'Conflict with the current state (for example an id that exists)',
  422: 'The `Idempotency-Key` was already used with a different request',
  405: 'Method not allowed',
  413: 'Request body too large',
  415: 'Unsupported body content type or encoding',
  502: 'The payment provider returned an error',
};

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, {
    io,
    target: 'draft-2020-12',
    unrepresentable: 'any',
    override: io === 'input' ? blankRule : undefined,
  }) as Record<string, unknown>;
  return io === 'input' ? inputRules(rest) : rest;
}

/** A trimmed string with a minimum length refuses blanks: the document says so with a pattern. */
function blankRule(ctx: { zodSchema: unknown; jsonSchema: Record<string, unknown> }) {
  const js = ctx.jsonSchema;
  const min = js.minLength;
  if (js.type !== 'string' || typeof min !== 'number' || min < 1 || js.pattern !== undefined) return;
  const zs = ctx.zodSchema as z.ZodType;
  if (!zs.safeParse(' '.repeat(min)).success && zs.safeParse('a'.repeat(min)).success)
    js.pattern = '^[^\\u0000]*\\S[^\\u0000]*$';
}

/** Keywords that only annotate a schema: one with nothing else accepts any value. */
const ANNOTATIONS = new Set(['title', 'description', 'deprecated', 'examples']);

/** No NUL character anywhere (PostgreSQL text cannot store one; the service answers 400 before validation). */
const NO_NUL = '^[^\\u0000]*$';

/**
 * Rules every input passes through before its route's schema, stated in each input schema so that a generator
 * following the document produces only accepted input: strings and keys without NUL characters, and no
 * `__proto__` key (the JSON parser refuses it).
 */
function inputRules(node: unknown): Record<string, unknown> {
  if (Array.isArray(node)) return node.map(inputRules) as never;
  if (!node || typeof node !== 'object') return node as never;
  const out: Record<string, unknown> = {};
  // Free-form JSON (`z.unknown()`, perhaps with a description): any JSON value, under the same rules.
  if (Object.keys(node).every((k) => ANNOTATIONS.has(k))) return { ...node, $ref: '#/components/schemas/JsonValue' };
  for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
    if (['properties', '$defs', 'definitions', 'patternProperties'].includes(k) && v && typeof v === 'object')
      out[k] = Object.fromEntries(Object.entries(v).map(([name, sub]) => [name, inputRules(sub)]));
    else if (['items', 'prefixItems', 'anyOf', 'oneOf', 'allOf', 'not', 'additionalProperties'].includes(k))
      out[k] = inputRules(v);
    else out[k] = v;
  }
  const types = Array.isArray(out.type) ? out.type : [out.type];
  if (types.includes('string') && out.pattern === undefined && out.format === undefined && out.enum === undefined)
    if (out.const === undefined) out.pattern = NO_NUL;
  if (types.includes('object') && out.additionalProperties !== false) {
    const names = (out.propertyNames ?? {}) as Record<string, unknown>;
    out.propertyNames = { ...names, pattern: NO_NUL, not: { const: '__proto__' } };
    // Fields the route ignores (OAuth's, as RFC 6749 and 7591 require) still pass the rules every input passes.
    out.additionalProperties ??= { $ref: '#/components/schemas/JsonValue' };
  }
  return out;
}

function objectShape(schema: z.ZodType | undefined): Record<string, z.ZodType> {
  if (!schema) return {};
  const s = schema as unknown as { shape?: Record<string, z.ZodType> };
  return s.shape ?? {};
}

/**
 * A body is required when an empty one would be refused; OAuth endpoints also take forms (RFC 6749). Bodies are
 * strict (unknown fields are a 400), as the router parses them.
 */
function requestBody(def: RouteDef) {
  const body = def.body!;
  const schema = jsonSchema(def.oauth ? body : strictBody(body), 'input');
  schema.description = [schema.description, `JSON nested at most ${MAX_JSON_DEPTH} levels deep.`]
    .filter(Boolean)
    .join(' ');
  const content: Record<string, unknown> = { 'application/json': { schema } };
  // A form carries flat fields only, so it is documented where the body has no lists or objects.
  const flat = Object.values((schema.properties ?? {}) as Record<string, { type?: unknown }>).every(
    (p) => p.type === 'string' || p.type === 'boolean' || p.type === 'number' || p.type === 'integer',
  );
  // A form field is text given once (a repeated field is a 400, RFC 6749 3.2), so a field the endpoint ignores is
  // a string there, where JSON may carry any value.
  const ignored = schema.additionalProperties;
  const form =
    ignored && ignored !== false ? { ...schema, additionalProperties: { type: 'string', maxLength: 10_000 } } : schema;
  if ((def.oauth || def.form) && flat) content['application/x-www-form-urlencoded'] = { schema: form };
  return { required: !body.safeParse({}).success, content };
}

/** POST routes with a credential take an `Idempotency-Key` (src/http/idempotency.ts decides the same way). */
const takesIdempotencyKey = (def: RouteDef) =>
  def.method === 'POST' && !def.oauth && def.idempotency !== false && !def.auth.includes('N');

const IDEMPOTENCY_PARAMETER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    "Makes a retry safe (Stripe's semantics): a request repeated with the same key within 24 hours, by the same " +
    'credential of the same app, answers the first response (status and body, with `Idempotent-Replayed: true`) ' +
    'without doing the work again. The same key with another method, path or body is a 422; a retry while the ' +
    'first request still runs waits for it, then answers 409 if it has not finished.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
};

const TOO_MANY = {
  description:
    'Too many requests: the per-credential rate limit (`RATE_LIMIT_PER_SECOND`), too many failed credentials ' +
    'from this address, or too many client registrations. Successful answers carry `RateLimit-Limit`, ' +
    '`RateLimit-Remaining` and `RateLimit-Reset`.',
  headers: {
    'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'integer', minimum: 1 } },
  },
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
};

const UNAVAILABLE = {
  description:
    'The database cannot be reached (an outage); retry after `Retry-After` seconds. Requests that only need the ' +
    'database answer again as soon as it is back, without a restart. With `outcome: "unknown"` the database stopped ' +
    'answering while it committed the change, which may have been applied: look before repeating it, or retry with ' +
    'the same `Idempotency-Key` (never applied twice).',
  headers: {
    'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'integer', minimum: 1 } },
  },
  content: {
    'application/json': {
      schema: {
        type: 'object',
        properties: {
          error: { type: 'string' },
          outcome: {
            type: 'string',
            enum: ['unknown'],
            description: 'Present when the change may have been applied (its commit went unanswered)',
          },
        },
        required: ['error'],
      },
    },
  },
};

/** OpenAPI 3.1, derived from the route table and its zod schemas (the same ones the router validates with). */
export function buildOpenApi(routes: readonly RouteDef[], opts: { serverUrl?: string; version: string }) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const def of routes) {
    const path = def.path.replace(/:(\w+)/g, '{$1}');
    const parameters: Record<string, unknown>[] = [];
    for (const [name, schema] of Object.entries(objectShape(def.params))) {
      parameters.push({ name, in: 'path', required: true, schema: jsonSchema(schema, 'input') });
    }
    for (const name of def.path.match(/:(\w+)/g)?.map((m) => m.slice(1)) ?? []) {
      if (!parameters.some((p) => p.name === name))
        parameters.push({ name, in: 'path', required: true, schema: { type: 'string' } });
    }
    for (const [name, schema] of Object.entries(objectShape(def.query))) {
      const optional = schema.safeParse(undefined).success;
      parameters.push({ name, in: 'query', required: !optional, schema: jsonSchema(schema, 'input') });
    }
    const idempotent = takesIdempotencyKey(def);
    if (idempotent) parameters.push({ $ref: '#/components/parameters/IdempotencyKey' });
    const open = def.auth.includes('N');
    const status = String(def.status ?? 200);
    const responses: Record<string, unknown> = {
      [status]: def.response
        ? { description: 'OK', content: { 'application/json': { schema: jsonSchema(def.response, 'output') } } }
        : { description: 'OK' },
    };
    for (const [code, reply] of Object.entries(def.replies ?? {})) {
      const types = typeof reply.contentType === 'string' ? [reply.contentType] : (reply.contentType ?? []);
      responses[code] = {
        description: reply.description,
        ...(reply.schema
          ? { content: { 'application/json': { schema: jsonSchema(reply.schema, 'output') } } }
          : types.length
            ? { content: Object.fromEntries(types.map((t) => [t, { schema: bodySchema(t, reply.events) }])) }
            : {}),
      };
    }
    // The authorization endpoint and the consent pages show invalid requests to the person as an HTML page (spec).
    if (def.invalidInput)
      responses['400'] ??= {
        description: 'The request cannot go on: an HTML page says why',
        content: { 'text/html': { schema: { type: 'string' } } },
      };
    const errorStatuses = new Set<number>(def.errors ?? []);
    if (def.params || def.query || def.body || def.path.includes(':')) errorStatuses.add(400);
    if (!open) errorStatuses.add(401);
    // A record in the path, or one a body refers to, that does not exist.
    if (def.path.includes(':') || def.body) errorStatuses.add(404);
    if (def.body) {
      errorStatuses.add(413);
      errorStatuses.add(415);
    }
    if (idempotent) {
      errorStatuses.add(409);
      errorStatuses.add(422);
    }
    for (const code of [...errorStatuses].sort()) {
      responses[String(code)] ??= {
        description: STATUS_TEXT[code] ?? 'Error',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
    }
    // Every request that carries a credential is counted (throttle middleware); so are client registrations.
    if (!open || def.throttle?.length) responses['429'] ??= { $ref: '#/components/responses/TooManyRequests' };
    // Any request may meet a database outage (src/http/middleware.ts): 503 with Retry-After, never a 500.
    responses['503'] ??= { $ref: '#/components/responses/ServiceUnavailable' };
    // Node's HTTP server answers this one itself, with no body, before the service sees the request.
    responses['431'] = { description: 'Request headers (the URL included) larger than 16 KB' };
    const credentials = open
      ? CREDENTIALS.N
      : def.auth.includes('A')
        ? CREDENTIALS.A
        : [...def.auth.map((c) => CREDENTIALS[c]), 'admin key'].join(', ');
    paths[path] ??= {};
    paths[path][def.method.toLowerCase()] = {
      operationId: def.sdk,
      summary: def.summary,
      description: [def.description, `**Credentials:** ${credentials}.`].filter(Boolean).join('\n\n'),
      tags: def.tags,
      ...(parameters.length ? { parameters } : {}),
      ...(def.body ? { requestBody: requestBody(def) } : {}),
      responses,
      security: open ? [] : [{ bearer: [] }],
      'x-credentials': def.auth,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'offerkit API',
      version: opts.version,
      description:
        'Entitlements, plans, usage limits, offers, checkouts, subscriptions, cancel flows, webhooks and analytics ' +
        'for many apps. ' +
        'Every request carries one `Authorization: Bearer <credential>`; each operation lists the credentials it ' +
        'accepts. ' +
        'Errors are `{ "error": "<message>" }`. Generated from the service\'s own route table.',
    },
    ...(opts.serverUrl ? { servers: [{ url: opts.serverUrl }] } : {}),
    tags: [...new Set(routes.flatMap((r) => r.tags))].map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description:
            'Admin key, secret key `key_...`, publishable key `pub_...`, account token `act_...`, or (MCP endpoint ' +
            'only) an OAuth access token `mcp_at_...`.',
        },
      },
      parameters: { IdempotencyKey: IDEMPOTENCY_PARAMETER },
      responses: { TooManyRequests: TOO_MANY, ServiceUnavailable: UNAVAILABLE },
      schemas: {
        Error: { type: 'object', properties: { error: { type: 'string' } }, required: ['error'] },
        JsonValue: {
          description:
            'Any JSON value, without NUL characters and without a `__proto__` key. Stored free-form JSON has limits ' +
            'on nesting and size (see each field).',
          anyOf: [
            { type: 'string', pattern: NO_NUL },
            { type: ['number', 'boolean', 'null'] },
            { type: 'array', items: { $ref: '#/components/schemas/JsonValue' } },
            {
              type: 'object',
              propertyNames: { pattern: NO_NUL, not: { const: '__proto__' } },
              additionalProperties: { $ref: '#/components/schemas/JsonValue' },
            },
          ],
        },
      },
    },
  };
}

/**
 * The schema of a non-JSON body. An event stream's is that of one event, as OpenAPI 3.2's `itemSchema` and
 * schemathesis read it: `data` (JSON text), `event` (one of the route's names), `id` and `retry`.
 */
function bodySchema(contentType: string, events?: string[]): Record<string, unknown> {
  if (contentType !== 'text/event-stream') return { type: 'string' };
  return {
    type: 'object',
    properties: {
      data: { type: 'string', contentMediaType: 'application/json' },
      event: events ? { type: 'string', enum: events } : { type: 'string' },
      id: { type: 'string' },
      retry: { type: 'integer', minimum: 0 },
    },
    required: ['data'],
  };
}
