// The view of an MCP App UI resource (src/mcp/apps.ts): a page holding one component, which it fills from the
// tool result the host passes (MCP Apps, `@modelcontextprotocol/ext-apps`), never from the network.
import { App } from '@modelcontextprotocol/ext-apps/app-with-deps';
import type { OfferkitPaywall } from '../src/paywall.js';
import type { OfferkitUsageMeter } from '../src/usage-meter.js';

type Result = { structuredContent?: Record<string, unknown>; content?: { type: string; text?: string }[] };

/** The tool's JSON: its structured content, else its text parsed (a host may pass either). */
function dataOf(result: Result): Record<string, unknown> | null {
  if (result.structuredContent) return result.structuredContent;
  const text = result.content?.find((c) => c.type === 'text')?.text;
  try {
    return text ? (JSON.parse(text) as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function show(result: Result) {
  const data = dataOf(result);
  const note = document.getElementById('note')!;
  note.textContent = '';
  if (!data) return;
  const meter = document.querySelector<OfferkitUsageMeter>('offerkit-usage-meter');
  if (meter && Array.isArray(data.entitlements)) meter.access = data as unknown as OfferkitUsageMeter['access'];
  const paywall = document.querySelector<OfferkitPaywall>('offerkit-paywall');
  if (paywall) {
    // A 402 shows the paywall; a usage call that went through says what the counter is now.
    if (!paywall.show(data) && typeof data.count === 'number')
      note.textContent = `${String(data.entitlement)}: ${data.count} used`;
  }
}

const app = new App({ name: 'offerkit', version: '1.0.0' });
app.ontoolresult = (result) => show(result as Result);
void app.connect();
