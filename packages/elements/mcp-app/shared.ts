// What every MCP App view shares (src/mcp/apps.ts serves one page per app, each with its own entry in this folder
// holding only its components): the bridge to the host, the tool's JSON, the page's note, and reading the account's
// access through the host when the tool's own result lacks it.
import type { EffectiveAccess } from '../src/client.js';
import { ViewBridge, type ToolResult } from './bridge.js';

export type { ToolResult };

export const bridge = new ViewBridge({ name: 'offerkit', version: '1.0.0' });

/** The tool's JSON: its structured content, else its text parsed (a host may pass either). */
export function dataOf(result: ToolResult): Record<string, unknown> | null {
  if (result.structuredContent) return result.structuredContent;
  const text = result.content?.find((c) => c.type === 'text')?.text;
  try {
    return text ? (JSON.parse(text) as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The page's status line (`<p id="note">`, hidden while empty). */
export function say(text: string): void {
  document.getElementById('note')!.textContent = text;
}

/** A refusal other than a 402 (whose body the paywall shows), said as it is; true when there was one. */
export function refused(data: Record<string, unknown>): boolean {
  if (typeof data.error !== 'string' || data.error === 'limit_reached') return false;
  say(data.error);
  return true;
}

/** Whether the JSON is an account's effective access (get_account_access). */
export const isAccess = (data: unknown): data is EffectiveAccess =>
  !!data && Array.isArray((data as EffectiveAccess).entitlements) && !!(data as EffectiveAccess).plan;

/**
 * Another read-only tool's answer for the account, through the host (`tools/call`, when it proxies the server's
 * tools): null when it cannot, or the tool refused.
 */
export async function readThroughHost(
  name: string,
  args: Record<string, unknown>,
): Promise<Record<string, unknown> | null> {
  if (!bridge.host.serverTools || typeof args.namespaceId !== 'string') return null;
  try {
    const result = await bridge.callServerTool({ name, arguments: { namespaceId: args.namespaceId } });
    const data = result.isError ? null : dataOf(result);
    return data && typeof data.error !== 'string' ? data : null;
  } catch {
    return null;
  }
}

/**
 * A link clicked in a component (the paywall's "Upgrade to Pro", a checkout link): the frame is sandboxed and may
 * not navigate, so the host opens it (`ui/open-link`) in the person's browser.
 */
document.addEventListener('click', (e) => {
  const a = e.composedPath().find((n): n is HTMLAnchorElement => n instanceof HTMLAnchorElement && !!n.href);
  if (!a || !/^https?:/.test(a.href)) return;
  e.preventDefault();
  bridge.openLink(a.href).catch((err: unknown) => say(err instanceof Error ? err.message : String(err)));
});

/** Connects to the host; `show` gets each tool result with the tool's arguments (sent before it). */
export function start(show: (data: Record<string, unknown>, args: Record<string, unknown>) => void | Promise<void>) {
  let args: Record<string, unknown> = {};
  bridge.ontoolinput = (a) => (args = a);
  bridge.ontoolresult = (result) => {
    say('');
    const data = dataOf(result);
    if (!data || refused(data)) return;
    void Promise.resolve(show(data, args)).catch((e: unknown) => say(e instanceof Error ? e.message : String(e)));
  };
  void bridge.connect();
}
