import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type {
  JsonSchemaType,
  JsonSchemaValidator,
  jsonSchemaValidator,
} from '@modelcontextprotocol/sdk/validation/types.js';
import { call } from './http.js';
import { testEnv } from './servers.js';

export const mcpUrl = (appId: string) => new URL(`${testEnv().baseUrl}/apps/${appId}/mcp`);

/**
 * The request's choice of every toolset (src/mcp/toolsets.ts): tools/list names every tool the caller may call, as
 * before toolsets. For tests of what a caller may call (levels, switches), not of what is listed by default.
 */
export const ALL_TOOLSETS = { 'X-MCP-Toolsets': 'all' };

/**
 * The test clients' check of tool results against each tool's output schema (the SDK's own, Ajv), shared by every
 * client of the process: a client compiles the output schema of every tool it lists, the same hundred schemas for each
 * of the suite's clients, so each schema is compiled once here and its validator reused.
 */
class SharedValidator implements jsonSchemaValidator {
  private readonly ajv = new AjvJsonSchemaValidator();
  private readonly compiled = new Map<string, JsonSchemaValidator<unknown>>();
  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    const key = JSON.stringify(schema);
    let validator = this.compiled.get(key);
    if (!validator) this.compiled.set(key, (validator = this.ajv.getValidator<unknown>(schema)));
    return validator as JsonSchemaValidator<T>;
  }
}
export const jsonSchemaValidatorOfTests = new SharedValidator();

/** An SDK client over streamable HTTP, with a bearer key or an OAuth provider (and headers of its own). */
export async function connectMcp(
  appId: string,
  auth: { key?: string; provider?: OAuthClientProvider; headers?: Record<string, string> },
  name = 'test-client',
) {
  const headers = { ...(auth.key ? { Authorization: `Bearer ${auth.key}` } : {}), ...auth.headers };
  const transport = new StreamableHTTPClientTransport(mcpUrl(appId), {
    ...(Object.keys(headers).length ? { requestInit: { headers } } : {}),
    ...(auth.provider ? { authProvider: auth.provider } : {}),
  });
  const client = new Client({ name, version: '1.0.0' }, { jsonSchemaValidator: jsonSchemaValidatorOfTests });
  await client.connect(transport);
  return { client, transport };
}

/** The text of a tool result, parsed as JSON when it is. */
export function resultText(result: unknown): string {
  const r = result as { content: { type: string; text: string }[] };
  return r.content[0].text;
}
export const resultJson = (result: unknown) => JSON.parse(resultText(result));

/** A raw JSON-RPC POST to an app's MCP endpoint (as any HTTP client would send it). */
export const mcpPost = (appId: string, body: unknown, token: string | null, headers: Record<string, string> = {}) =>
  call('POST', `/apps/${appId}/mcp`, {
    token,
    body,
    headers: { Accept: 'application/json, text/event-stream', ...headers },
  });

export const TOOLS_LIST = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
