import http from 'node:http';
import type net from 'node:net';
import { createApp } from '../../src/app.js';
import type { Deps } from '../../src/deps.js';
import type { RouteDef } from '../../src/http/route.js';
import { testEnv } from './servers.js';

/** Serves a given route table through the real middleware stack (auth, validation, errors). */
export async function mountRoutes(
  routes: RouteDef[],
  overrides: Partial<Deps> = {},
): Promise<{ base: string; close(): Promise<void> }> {
  const server = http.createServer(createApp({ ...testEnv().deps, ...overrides }, routes).callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as net.AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
