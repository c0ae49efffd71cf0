// The view side of the MCP Apps extension (`@modelcontextprotocol/ext-apps`, protocol 2026-01-26) in a few kB:
// JSON-RPC 2.0 over `postMessage` with the host window, the handshake (`ui/initialize`, then
// `ui/notifications/initialized`), the tool's input and result, and the requests a view sends (`tools/call`,
// `ui/open-link`, `ui/message`, `ui/notifications/size-changed`).
//
// Why not the package's own `App` class: it validates every message with zod schemas and runs on the MCP client
// SDK's Protocol, which no bundler can shake out (ext-apps issue #649): 649 KB minified for a page that shows one
// component, against the 150 KB each page is allowed (docs/decisions: "MCP Apps: a light view bridge"). The
// messages' shapes are the package's types (type-only imports: no bytes), and test/browser/mcp-apps.test.ts runs
// every page against the package's real host side (AppBridge, PostMessageTransport).
import type {
  McpUiAppCapabilities,
  McpUiInitializeRequest,
  McpUiInitializeResult,
  McpUiInitializedNotification,
  McpUiMessageRequest,
  McpUiOpenLinkRequest,
  McpUiResourceTeardownRequest,
  McpUiSizeChangedNotification,
  McpUiToolInputNotification,
  McpUiToolResultNotification,
} from '@modelcontextprotocol/ext-apps';

/** A tool's result as the host passes it (MCP's CallToolResult, the parts a view reads). */
export type ToolResult = {
  structuredContent?: Record<string, unknown>;
  content?: { type: string; text?: string }[];
  isError?: boolean;
};

const PROTOCOL_VERSION: McpUiInitializeRequest['params']['protocolVersion'] = '2026-01-26';
const INITIALIZE: McpUiInitializeRequest['method'] = 'ui/initialize';
const INITIALIZED: McpUiInitializedNotification['method'] = 'ui/notifications/initialized';
const TOOL_INPUT: McpUiToolInputNotification['method'] = 'ui/notifications/tool-input';
const TOOL_RESULT: McpUiToolResultNotification['method'] = 'ui/notifications/tool-result';
const TEARDOWN: McpUiResourceTeardownRequest['method'] = 'ui/resource-teardown';
const SIZE_CHANGED: McpUiSizeChangedNotification['method'] = 'ui/notifications/size-changed';
const OPEN_LINK: McpUiOpenLinkRequest['method'] = 'ui/open-link';
const MESSAGE: McpUiMessageRequest['method'] = 'ui/message';

type Message = {
  jsonrpc: '2.0';
  id?: number | string;
  method?: string;
  params?: Record<string, unknown>;
  result?: unknown;
  error?: { code: number; message: string };
};

export class ViewBridge {
  /** The tool's arguments, when the host sends them (before the result). */
  ontoolinput: (args: Record<string, unknown>) => void = () => {};
  ontoolresult: (result: ToolResult) => void = () => {};
  /** What the host said it can do (`hostCapabilities` of the handshake), once connected. */
  host: McpUiInitializeResult['hostCapabilities'] = {};
  private next = 1;
  private waiting = new Map<number | string, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly parent: Window = window.parent;

  constructor(private readonly info: { name: string; version: string }) {}

  /** Listens to the host, makes the handshake, and then reports the page's size as it changes. */
  async connect(): Promise<void> {
    window.addEventListener('message', (e) => {
      // Only the host's messages: the page has no other frame, but a message can come from anywhere.
      if (e.source !== this.parent || (e.data as Message)?.jsonrpc !== '2.0') return;
      this.receive(e.data as Message);
    });
    const capabilities: McpUiAppCapabilities = {};
    const init = (await this.request(INITIALIZE, {
      appInfo: this.info,
      appCapabilities: capabilities,
      protocolVersion: PROTOCOL_VERSION,
    })) as McpUiInitializeResult;
    this.host = init.hostCapabilities ?? {};
    this.notify(INITIALIZED, {});
    // The host sizes its frame to the page (its default iframe height is no fit for a card): the body's height,
    // not the document's, which is never less than the frame's and so would never let it shrink. Height only: the
    // width is the host's column.
    let last = -1;
    const report = () => {
      const height = Math.ceil(document.body.getBoundingClientRect().height);
      if (height === last) return;
      last = height;
      this.notify(SIZE_CHANGED, { height });
    };
    new ResizeObserver(report).observe(document.body);
    report();
  }

  /** Calls a tool of the server through the host (`serverTools`): the view has no network of its own. */
  async callServerTool(params: { name: string; arguments: Record<string, unknown> }): Promise<ToolResult> {
    return (await this.request('tools/call', params)) as ToolResult;
  }

  /** Asks the host to open a link (a checkout) in the person's browser. */
  async openLink(url: string): Promise<void> {
    const done = (await this.request(OPEN_LINK, { url })) as { isError?: boolean };
    if (done?.isError) throw new Error('The host did not open the link');
  }

  /** Sends a message to the conversation as the person. */
  async sendMessage(text: string): Promise<void> {
    await this.request(MESSAGE, { role: 'user', content: [{ type: 'text', text }] });
  }

  private send(message: Omit<Message, 'jsonrpc'>) {
    this.parent.postMessage({ jsonrpc: '2.0', ...message }, '*');
  }

  private notify(method: string, params: Record<string, unknown>) {
    this.send({ method, params });
  }

  private request(method: string, params: Record<string, unknown>): Promise<unknown> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.send({ id, method, params });
    });
  }

  private receive(m: Message) {
    if (m.method === undefined) {
      // A response to one of ours.
      const waiter = m.id === undefined ? undefined : this.waiting.get(m.id);
      if (!waiter) return;
      this.waiting.delete(m.id!);
      if (m.error) waiter.reject(new Error(m.error.message));
      else waiter.resolve(m.result);
      return;
    }
    if (m.id !== undefined) {
      // A request of the host's: teardown and ping are answered; a view offers no tools or other methods.
      if (m.method === TEARDOWN || m.method === 'ping') this.send({ id: m.id, result: {} });
      else this.send({ id: m.id, error: { code: -32601, message: `Method not found: ${m.method}` } });
      return;
    }
    if (m.method === TOOL_INPUT) this.ontoolinput((m.params?.arguments as Record<string, unknown>) ?? {});
    else if (m.method === TOOL_RESULT) this.ontoolresult((m.params ?? {}) as ToolResult);
    // Other notifications (the host's context, partial input, cancellation) change nothing a page shows.
  }
}
