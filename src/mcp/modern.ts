import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { createMcpHandler, Server, type McpHttpHandler } from '@modelcontextprotocol/server';
import type { Logger } from '../logger.js';
import { RawBody, Reply } from '../http/route.js';
import { beforeModernCall, stateCodec } from './confirm.js';
import { CACHE_HINTS, CAPABILITIES, INSTRUCTIONS, registerHandlers, serverInfo } from './handlers.js';
import type { McpRequestContext } from './run-tool.js';
import { registerTaskHandlers, TASKS_EXTENSION } from './tasks.js';

/**
 * The 2026-07-28 protocol: the SDK's `createMcpHandler`, which serves each request with a server of its own built
 * here (the same handlers as the 2025 era's, src/mcp/handlers.ts) and does what that revision asks of the wire:
 * the per-request `_meta` envelope (version, client info and capabilities) checked, `server/discover`, the
 * `Mcp-Method`/`Mcp-Name` headers required and checked against the body (-32020), `resultType`, the server's
 * identity in each result's `_meta`, cache hints on the cacheable results, and `input_required` results with a
 * signed `requestState` for questions to the person. Nothing is kept between requests: any API process answers any
 * request. 2025-era requests never reach it (`legacy: 'reject'`): the route sends them to src/mcp/legacy.ts.
 */

const handlers = new WeakMap<Logger, McpHttpHandler>();

function handlerFor(logger: Logger): McpHttpHandler {
  let handler = handlers.get(logger);
  if (!handler) {
    handler = createMcpHandler(
      ({ authInfo }) => {
        const ctx = authInfo!.extra!.mcp as McpRequestContext;
        const server = new Server(serverInfo(ctx.app.name), {
          // The Tasks extension (src/mcp/tasks.ts): in server/discover's capabilities, for this era only.
          capabilities: { ...CAPABILITIES, extensions: { [TASKS_EXTENSION]: {} } },
          instructions: INSTRUCTIONS,
          cacheHints: CACHE_HINTS,
          // A `requestState` the client sends back is checked (HMAC, the caller, its age) before the handler runs.
          requestState: { verify: (state, handler) => stateCodec(ctx).verify(state, handler) },
        });
        registerHandlers(server, { contextOf: () => ctx, modern: { beforeCall: beforeModernCall } });
        registerTaskHandlers(server, () => ctx);
        return server;
      },
      {
        legacy: 'reject',
        // Requests the SDK refuses (a header that disagrees with the body, a bad envelope) are answered to the
        // client; the log keeps them at debug level.
        onerror: (err) => logger.debug({ err: err.message }, 'MCP 2026-07-28 request refused or failed'),
      },
    );
    handlers.set(logger, handler);
  }
  return handler;
}

/**
 * Answers a 2026-07-28 request (already classified as one by the SDK's `classifyInboundRequest`) through the SDK's
 * handler: a web `Request` carrying the HTTP headers it reads (the body is handed over parsed), the request's context
 * as the handler's `authInfo`, and its `Response` as the route's reply.
 */
export async function serveModern(
  ctx: McpRequestContext,
  url: string,
  headers: Record<string, string | undefined>,
  body: unknown,
): Promise<Reply<RawBody>> {
  const sent = new Headers();
  for (const [k, v] of Object.entries(headers)) if (typeof v === 'string') sent.set(k, v);
  const response = await handlerFor(ctx.deps.logger).fetch(new Request(url, { method: 'POST', headers: sent }), {
    parsedBody: body,
    authInfo: { token: '', clientId: '', scopes: [], extra: { mcp: ctx } },
  });
  const type = response.headers.get('content-type') ?? '';
  const kept: Record<string, string> = {};
  for (const name of ['allow', 'www-authenticate']) {
    const v = response.headers.get(name);
    if (v) kept[name] = v;
  }
  if (type.startsWith('text/event-stream') && response.body)
    return new Reply(
      response.status,
      Readable.fromWeb(response.body as unknown as NodeReadableStream),
      kept,
      'text/event-stream',
    );
  const text = withoutTaskContent(await response.text());
  return new Reply(response.status, text, kept, text ? 'application/json' : undefined);
}

/**
 * A task handle (`resultType: "task"`, src/mcp/tasks.ts) is the extension's `CreateTaskResult`, a task and no tool
 * result: the SDK's tools/call path gives every result without `content` an empty one, taken off here.
 */
function withoutTaskContent(text: string): string {
  if (!text.includes('"resultType":"task"')) return text;
  const message = JSON.parse(text) as { result?: Record<string, unknown> };
  if (message.result?.resultType !== 'task') return text;
  delete message.result.content;
  return JSON.stringify(message);
}
