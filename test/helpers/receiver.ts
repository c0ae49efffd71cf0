import http from 'node:http';
import type net from 'node:net';

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

/** What the receiver answers to the n-th request (0-based); default 200. */
export type Script = (
  n: number,
  req: Received,
) => { status: number; body?: string; delayMs?: number; headers?: Record<string, string> };

/** A real HTTP server on loopback that records every webhook it gets and answers as scripted. */
export async function startReceiver(script: Script = () => ({ status: 200, body: 'ok' })) {
  const received: Received[] = [];
  const waiters: (() => void)[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const r = { headers: req.headers, body, at: Date.now() };
      const n = received.length;
      received.push(r);
      waiters.splice(0).forEach((w) => w());
      const answer = script(n, r);
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers });
        res.end(answer.body ?? '');
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    received,
    /** Waits until at least `n` requests arrived. */
    async waitFor(n: number, timeoutMs = 20_000) {
      const end = Date.now() + timeoutMs;
      while (received.length < n) {
        if (Date.now() > end) throw new Error(`receiver got ${received.length} of ${n} requests`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 200);
        });
      }
      return received;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
