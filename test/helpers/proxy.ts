import http from 'node:http';
import net from 'node:net';

export interface Proxy {
  url: string;
  /** Requests forwarded so far. */
  count: number;
  /** While true, requests are held (never answered until released): a provider that does not answer. */
  stalled: boolean;
  close(): Promise<void>;
}

/**
 * A small HTTP forwarding proxy on loopback: passes every request to `target` with its headers as sent
 * (Host included), adding `addHeaders`; counts requests and can stall them.
 */
export async function forwardingProxy(target: string, addHeaders: Record<string, string> = {}): Promise<Proxy> {
  const t = new URL(target);
  const held: (() => void)[] = [];
  const state: Proxy = {
    url: '',
    count: 0,
    stalled: false,
    close: async () => {
      held.splice(0).forEach((release) => release());
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
  const server = http.createServer((req, res) => {
    state.count++;
    const forward = () => {
      const upstream = http.request(
        {
          host: t.hostname,
          port: t.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, ...addHeaders },
        },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      upstream.on('error', () => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      });
      req.pipe(upstream);
    };
    if (state.stalled) held.push(() => res.destroy());
    else forward();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  state.url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return state;
}

/** A raw HTTP request (node:http), so headers fetch forbids (Host) can be sent as given. */
export function rawRequest(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string; body: any }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method: opts.method ?? 'GET',
        headers: opts.headers,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => {
          let body: unknown = text;
          if ((res.headers['content-type'] ?? '').includes('json') && text) body = JSON.parse(text);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
        });
      },
    );
    req.on('error', reject);
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}

export interface TcpProxy {
  /** host:port to connect to instead of the target. */
  address: string;
  /** While true, nothing passes in either direction (dropped, as by a network partition); connections stay open. */
  partitioned: boolean;
  close(): Promise<void>;
}

/** A TCP forwarder on loopback to `target` (host:port) that can be partitioned: for gRPC (Temporal) clients. */
export async function tcpProxy(target: string): Promise<TcpProxy> {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const sockets = new Set<net.Socket>();
  const state: TcpProxy = {
    address: '',
    partitioned: false,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(port, host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.on('data', (d: Buffer) => {
      if (!state.partitioned) upstream.write(d);
    });
    upstream.on('data', (d: Buffer) => {
      if (!state.partitioned) client.write(d);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  state.address = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return state;
}
