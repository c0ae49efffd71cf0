import { z } from 'zod';
import type { Cred, RouteDef } from './route.js';

const CREDENTIALS: Record<Cred, string> = {
  S: 'secret key (`key_...`)',
  P: 'publishable key (`pub_...`)',
  T: 'account token (`act_...`) for its own account',
  A: 'admin key only',
  N: 'no credential',
  O: 'MCP OAuth access token (`mcp_at_...`) of the app',
};

const STATUS_TEXT: Record<number, string> = {
  400: 'Invalid JSON or an invalid field (`<field>: <message>`)',
  401: 'Missing or wrong credential, or one not allowed on this route',
  402: 'A blocking usage limit would be passed (limit_reached body)',
  403: 'Not allowed for this credential',
  404: 'A record in the path (or referenced by the body) does not exist',
  409: 'Conflict with the current state (for example an id that exists)',
  413: 'Request body too large',
  502: 'The payment provider returned an error',
};

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, {
    io,
    target: 'draft-2020-12',
    unrepresentable: 'any',
  }) as Record<string, unknown>;
  return rest;
}

function objectShape(schema: z.ZodType | undefined): Record<string, z.ZodType> {
  if (!schema) return {};
  const s = schema as unknown as { shape?: Record<string, z.ZodType> };
  return s.shape ?? {};
}

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
            ? { content: Object.fromEntries(types.map((t) => [t, { schema: { type: 'string' } }])) }
            : {}),
      };
    }
    const errorStatuses = new Set<number>(def.errors ?? []);
    if (def.params || def.query || def.body) errorStatuses.add(400);
    if (!open) errorStatuses.add(401);
    if (def.path.includes(':')) errorStatuses.add(404);
    for (const code of [...errorStatuses].sort()) {
      responses[String(code)] ??= {
        description: STATUS_TEXT[code] ?? 'Error',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
    }
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
      ...(def.body
        ? {
            requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(def.body, 'input') } } },
          }
        : {}),
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
      schemas: { Error: { type: 'object', properties: { error: { type: 'string' } }, required: ['error'] } },
    },
  };
}
