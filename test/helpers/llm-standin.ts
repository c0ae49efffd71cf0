// A local stand-in for the model provider's API: the OpenAI Chat Completions endpoint, over real
// HTTP, so the service's official `openai` SDK client is exercised end to end. Each test says what
// the "model" answers (a JSON offer), or that it hangs (timeout) or fails (HTTP 500).
import http from 'node:http';
import type net from 'node:net';

export type ModelBehaviour = { reply: Record<string, unknown> } | { hang: true } | { status: number };

export interface RecordedCall {
  authorization: string | undefined;
  body: {
    model: string;
    messages: { role: string; content: string }[];
    response_format?: { type: string; json_schema?: { name: string; schema: unknown } };
  };
}

export class ModelStandIn {
  behaviour: ModelBehaviour = { status: 500 };
  readonly calls: RecordedCall[] = [];
  private server: http.Server | undefined;
  private port = 0;

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}/v1`;
  }

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
          res
            .writeHead(404, { 'content-type': 'application/json' })
            .end(JSON.stringify({ error: { message: 'not found', type: 'invalid_request_error' } }));
          return;
        }
        this.calls.push({ authorization: req.headers.authorization, body: JSON.parse(raw) });
        const b = this.behaviour;
        if ('hang' in b) return; // never answers; the client's timeout must fire
        if ('status' in b) {
          res
            .writeHead(b.status, { 'content-type': 'application/json' })
            .end(JSON.stringify({ error: { message: 'The server had an error', type: 'server_error' } }));
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            id: `chatcmpl-${this.calls.length}`,
            object: 'chat.completion',
            created: Math.floor(Date.now() / 1000),
            model: JSON.parse(raw).model,
            choices: [
              {
                index: 0,
                finish_reason: 'stop',
                logprobs: null,
                message: { role: 'assistant', content: JSON.stringify(b.reply), refusal: null },
              },
            ],
            usage: { prompt_tokens: 100, completion_tokens: 40, total_tokens: 140 },
          }),
        );
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', () => resolve()));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }
}
