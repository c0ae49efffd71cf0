import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import {
  CLIENT_CAPABILITIES_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  type CallToolResult,
  type Server,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { lazyFork } from '../db/lazy-em.js';
import type { Ctx } from '../context.js';
import type { McpRequestContext, Outcome } from './run-tool.js';
import { TASK_TOOLS, type TaskKind, type TaskRef, type TaskState } from './task-kinds.js';

/**
 * The MCP Tasks extension (`io.modelcontextprotocol/tasks`, the 2026-07-28 revision's): a tool whose outcome waits
 * on a person or on time (src/mcp/task-kinds.ts) answers a client that declares the extension in its request's
 * capabilities with a task handle (`resultType: "task"`) instead of its result; `tasks/get` reads the task's state,
 * with the tool's result inlined once it is `completed`; `tasks/cancel` asks the work to stop; `tasks/update` has
 * nothing to take (no task of ours asks the client for input). A task is a view of a record its workflow moves: the
 * task id is that record's reference, signed (HMAC under a key derived from the app's secret key) and bound to the
 * app and the caller (the OAuth connection, or the app's keys), so any API process answers any task request and a
 * task id of another app or credential is not found. Nothing is kept in memory.
 */

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** Whether the request's `_meta` capabilities declare the extension (a task is answered to no other request). */
export function declaresTasks(handler: ServerContext): boolean {
  const envelope = handler.mcpReq.envelope as Record<string, unknown> | undefined;
  const caps = envelope?.[CLIENT_CAPABILITIES_META_KEY] as { extensions?: Record<string, unknown> } | undefined;
  const declared = caps?.extensions?.[TASKS_EXTENSION];
  return declared !== undefined && declared !== null;
}

/** The task kind of a tool, or null when it never answers as a task. */
export const taskKindOf = (tool: string): TaskKind | null => TASK_TOOLS[tool] ?? null;

const PREFIX = 'task_';
const keys = new Map<string, { secret: string; key: Buffer }>();

function keyOf(ctx: McpRequestContext): Buffer {
  const known = keys.get(ctx.app.id);
  if (known?.secret === ctx.app.apiKey) return known.key;
  const key = createHmac('sha256', ctx.app.apiKey).update('offerkit MCP task').digest();
  keys.delete(ctx.app.id);
  keys.set(ctx.app.id, { secret: ctx.app.apiKey, key });
  while (keys.size > 1000) keys.delete(keys.keys().next().value!);
  return key;
}

/** Whose the task is: the app and the OAuth connection, or the app's keys (the secret and the admin key alike). */
const ownerOf = (ctx: McpRequestContext) =>
  `${ctx.app.id}\u0000${ctx.holder.kind === 'connection' ? ctx.holder.id : 'keys'}`;

const macOf = (ctx: McpRequestContext, payload: string) =>
  createHmac('sha256', keyOf(ctx))
    .update(`${ownerOf(ctx)}\u0000${payload}`)
    .digest();

/** The task id of a reference: `task_<reference>.<signature>` (base64url; 256 bits of signature). */
export function taskIdOf(ref: TaskRef, ctx: McpRequestContext): string {
  const payload = Buffer.from(JSON.stringify(ref)).toString('base64url');
  return `${PREFIX}${payload}.${macOf(ctx, payload).toString('base64url')}`;
}

const refSchema = z.object({
  k: z.enum(['checkout', 'change', 'delivery', 'pack_order']),
  id: z.string(),
  on: z.string().optional(),
  tool: z.string(),
  at: z.string(),
  x: z.record(z.string(), z.unknown()).optional(),
});

/** The reference a task id names, or null: not one of ours, or signed for another app or caller. */
export function refOf(taskId: string, ctx: McpRequestContext): TaskRef | null {
  if (!taskId.startsWith(PREFIX)) return null;
  const [payload, mac, ...rest] = taskId.slice(PREFIX.length).split('.');
  if (!payload || !mac || rest.length) return null;
  const given = Buffer.from(mac, 'base64url');
  const expected = macOf(ctx, payload);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    const ref = refSchema.safeParse(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')));
    return ref.success ? ref.data : null;
  } catch {
    return null;
  }
}

/** The spec's wording for an unknown task (-32602), the same for one of another app or caller. */
const notFound = () => new ProtocolError(ProtocolErrorCode.InvalidParams, 'Failed to retrieve task: Task not found');

const serviceCtx = (ctx: McpRequestContext): Ctx => ({ em: lazyFork(ctx.deps.orm.em), deps: ctx.deps, app: ctx.app });

/** A task as `tasks/get` and the first answer show it: the spec's fields, and where it runs in `_meta`. */
function taskJson(taskId: string, ref: TaskRef, state: TaskState, detailed: boolean): Record<string, unknown> {
  return {
    taskId,
    status: state.status,
    statusMessage: state.statusMessage,
    createdAt: ref.at,
    lastUpdatedAt: new Date(Math.max(state.lastUpdatedAt.getTime(), Date.parse(ref.at))).toISOString(),
    // Kept as long as the record it follows (checkouts, subscriptions, and deliveries for the retention period).
    ttlMs: null,
    pollIntervalMs: state.pollIntervalMs,
    ...(detailed && state.status === 'completed' && state.result ? { result: state.result } : {}),
    _meta: {
      'offerkit/task': {
        tool: ref.tool,
        follows: { kind: ref.k, id: ref.id, ...(ref.on ? { of: ref.on } : {}) },
        ...(state.status === 'working' && state.link ? { approve_url: state.link } : {}),
        workflows: state.workflows,
      },
    },
  };
}

/**
 * A tool call as a task: the call made as it is today (its checks, caps and call log; for a task kind with a
 * `start`, that start in place of the route's handler), then, when its answer starts work that waits, the task
 * handle, durably there (its record is committed) before it is answered. A refusal, or an answer that is already
 * final (a pricing-page link), is answered as the plain result.
 */
export async function callAsTask(
  tool: string,
  kind: TaskKind,
  args: Record<string, unknown>,
  ctx: McpRequestContext,
  call: () => Promise<Outcome>,
): Promise<Record<string, unknown>> {
  const outcome = await call();
  const plain: CallToolResult = {
    content: [{ type: 'text', text: outcome.text }],
    ...(outcome.structured ? { structuredContent: outcome.structured } : {}),
    isError: outcome.isError,
  };
  const seed = !outcome.isError && outcome.structured ? kind.seed(outcome.structured, args) : null;
  if (!seed) return plain;
  const ref: TaskRef = { ...seed, tool, at: new Date().toISOString() };
  const state = await kind.state(ref, serviceCtx(ctx));
  if (!state) return plain;
  return { resultType: 'task', ...taskJson(taskIdOf(ref, ctx), ref, state, false) };
}

const taskParams = z.looseObject({ taskId: z.string().min(1).max(4096) });

/**
 * Registers `tasks/get`, `tasks/cancel` and `tasks/update` on a 2026-07-28 server. Each checks the task id's
 * signature against the caller (-32602 "Task not found" otherwise) and, as the extension asks, refuses a request
 * whose capabilities do not declare it (-32021).
 */
export function registerTaskHandlers(server: Server, contextOf: (handler: ServerContext) => McpRequestContext): void {
  const task = (handler: ServerContext, taskId: string) => {
    if (!declaresTasks(handler))
      throw new ProtocolError(ProtocolErrorCode.MissingRequiredClientCapability, 'Missing required client capability', {
        requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
      });
    const ctx = contextOf(handler);
    const ref = refOf(taskId, ctx);
    const kind = ref ? taskKindOf(ref.tool) : null;
    if (!ref || !kind) throw notFound();
    return { ctx, ref, kind };
  };
  server.setRequestHandler('tasks/get', { params: taskParams }, async (params, handler) => {
    const { ctx, ref, kind } = task(handler, params.taskId);
    const state = await kind.state(ref, serviceCtx(ctx));
    if (!state) throw notFound();
    return taskJson(params.taskId, ref, state, true);
  });
  server.setRequestHandler('tasks/cancel', { params: taskParams }, async (params, handler) => {
    const { ctx, ref, kind } = task(handler, params.taskId);
    // Cooperative (the extension's word): the work stops where it still can; tasks/get says how it ended.
    await kind.cancel?.(ref, serviceCtx(ctx));
    return {};
  });
  server.setRequestHandler('tasks/update', { params: taskParams }, async (params, handler) => {
    // No task of ours is ever `input_required`: responses for keys it never issued are ignored, as the spec says.
    task(handler, params.taskId);
    return {};
  });
}
