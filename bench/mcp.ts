// The `mcp` section of `npm run bench`: MCP `tools/call` beside the REST route it wraps, with the secret key and
// with OAuth access tokens, under both protocol versions.
import http from 'node:http';
import { sql } from '../src/db/sql.js';
import { newConnectionId } from '../src/mcp/connections.js';
import { mcpResourceUrl } from '../src/oauth/oauth.service.js';
import { issueTokenPair, newFamilyId } from '../src/oauth/tokens.js';
import { testEnv } from '../test/helpers/servers.js';
import { DURATION, ROUNDS } from './settings.js';
import { cpuAccount } from './cpu.js';
import { fmt, medianOf, percentile, type Stats } from './load.js';

/**
 * The MCP door beside the REST door onto the same handler: `tools/call get_account_access` (one JSON-RPC request,
 * stateless, logged) against GET /plan with the secret key, the call once with the secret key and once with an OAuth
 * access token (issue 43: within 1.2x of the key at p50), under 2025-11-25 and 2026-07-28 (the `_meta` envelope and
 * the Mcp-Method/Mcp-Name headers; the v2 SDK's handler). BENCH_ROUNDS rounds per connection count, the doors in
 * turn (the order rotating each round); with more than one round, the median of each door's p50 ratio. The OAuth
 * calls go round BENCH_MCP_TOKENS connections (64), each with its own token, so none passes the per-connection
 * request rate (RATE_LIMIT_PER_SECOND, 100 a second in each API process) and the shipped limiter still runs.
 * BENCH_MCP_CONNECTIONS picks the counts (1,16); BENCH_MCP_DOORS the doors (all).
 */
export async function mcpBench(
  base: string,
  app: { id: string; api_key: string; public_key: string },
  account: () => string,
) {
  process.stdout.write(
    `\nMCP tools/call vs the REST route it wraps (effective access), ${DURATION} s per cell, ${ROUNDS} round(s):\n`,
  );
  process.stdout.write(
    'door                          conns      req/s   p50 ms   p99 ms  errors  API µs/req  PG µs/req  /REST p50  /key p50\n',
  );
  let id = 0;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const keyHeaders = { authorization: `Bearer ${app.api_key}` };
  const tokens = await oauthTokens(base, app.id, Number(process.env.BENCH_MCP_TOKENS ?? 64));
  let turn = 0;
  const token = () => tokens[turn++ % tokens.length];
  // Both doors through the same client (node's http, keep-alive, each request one write), timed to the microsecond:
  // autocannon reports whole milliseconds, too coarse for a route answered in one.
  const rest = (c: number) =>
    loop(c, () => ({ method: 'GET', path: `/apps/${app.id}/namespaces/${account()}/plan`, headers: keyHeaders }));
  const META = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  const mcp = (version: '2025-11-25' | '2026-07-28', credential: () => string) => (c: number) =>
    loop(c, () => ({
      method: 'POST',
      path: `/apps/${app.id}/mcp`,
      headers: {
        authorization: `Bearer ${credential()}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': version,
        ...(version === '2026-07-28' ? { 'mcp-method': 'tools/call', 'mcp-name': 'get_account_access' } : {}),
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: ++id,
        method: 'tools/call',
        params: {
          name: 'get_account_access',
          arguments: { namespaceId: account() },
          ...(version === '2026-07-28' ? { _meta: META } : {}),
        },
      }),
    }));
  const all: { name: string; run: (c: number) => Promise<Stats>; key?: string }[] = [
    { name: 'REST GET /plan', run: rest },
    { name: 'MCP 2025-11-25 key', run: mcp('2025-11-25', () => app.api_key) },
    { name: 'MCP 2025-11-25 OAuth', run: mcp('2025-11-25', token), key: 'MCP 2025-11-25 key' },
    { name: 'MCP 2026-07-28 key', run: mcp('2026-07-28', () => app.api_key) },
    { name: 'MCP 2026-07-28 OAuth', run: mcp('2026-07-28', token), key: 'MCP 2026-07-28 key' },
  ];
  const picked = (process.env.BENCH_MCP_DOORS ?? '').split(',').filter(Boolean);
  const doors = all.filter((d, i) => i === 0 || picked.length === 0 || picked.some((p) => d.name.includes(p)));
  const url = new URL(base);
  async function loop(
    c: number,
    next: () => { method: string; path: string; headers: Record<string, string>; body?: string },
  ): Promise<Stats> {
    const latencies: number[] = [];
    let errors = 0;
    const end = Date.now() + DURATION * 1000;
    const one = (r: ReturnType<typeof next>) =>
      new Promise<number>((resolve, reject) => {
        const req = http.request(
          { agent, host: url.hostname, port: url.port, method: r.method, path: r.path, headers: r.headers },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', reject);
        req.end(r.body);
      });
    const [, account] = await cpuAccount(
      () =>
        Promise.all(
          Array.from({ length: c }, async () => {
            while (Date.now() < end) {
              const t0 = process.hrtime.bigint();
              const status = await one(next()).catch(() => 0);
              if (status !== 200) errors++;
              latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
            }
          }),
        ),
      () => latencies.length,
    );
    latencies.sort((a, b) => a - b);
    return {
      rps: latencies.length / DURATION,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      errors,
      account,
    };
  }
  // Warm-up of every door (JIT, pools, the credential cache with every token's check) before anything is counted.
  for (const d of doors) await d.run(4);
  for (const t of tokens) {
    const r = await fetch(`${base}/apps/${app.id}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'tools/call', params: { name: 'get_app', arguments: {} } }),
    });
    if (r.status !== 200) throw new Error(`an OAuth token was refused: ${r.status} ${await r.text()}`);
  }
  const counts = (process.env.BENCH_MCP_CONNECTIONS ?? '1,16').split(',').map(Number);
  for (const c of counts) {
    const ratios = new Map<string, { rest: number[]; key: number[] }>();
    for (let round = 0; round < ROUNDS; round++) {
      const cells = new Map<string, Stats>();
      // The doors in turn, starting one further each round, so drift over a round does not favour a door.
      for (let i = 0; i < doors.length; i++) {
        const d = doors[(i + round) % doors.length];
        cells.set(d.name, await d.run(c));
      }
      const restP50 = cells.get('REST GET /plan')!.p50;
      for (const d of doors) {
        const r = cells.get(d.name)!;
        const toRest = r.p50 / restP50;
        const keyCell = d.key ? cells.get(d.key) : undefined;
        const toKey = keyCell ? r.p50 / keyCell.p50 : NaN;
        const kept = ratios.get(d.name) ?? { rest: [], key: [] };
        kept.rest.push(toRest);
        if (keyCell) kept.key.push(toKey);
        ratios.set(d.name, kept);
        process.stdout.write(
          `${d.name.padEnd(28)} ${String(c).padStart(6)} ${fmt(r.rps, 0)} ${fmt(r.p50, 2)} ${fmt(r.p99, 2)}  ` +
            `${String(r.errors).padEnd(6)}${fmt(r.account?.api ?? NaN, 0)}  ${fmt(r.account?.postgres ?? NaN, 0)}` +
            `   ${d.name.startsWith('MCP') ? fmt(toRest, 2) : '         '}` +
            `  ${keyCell ? fmt(toKey, 2) : ''}\n`,
        );
      }
    }
    if (ROUNDS > 1)
      for (const d of doors.filter((x) => x.name.startsWith('MCP'))) {
        const r = ratios.get(d.name)!;
        process.stdout.write(
          `${`${c} conns, median ${d.name}`.padEnd(90)}${fmt(medianOf(r.rest), 2)}` +
            `  ${r.key.length ? fmt(medianOf(r.key), 2) : ''}\n`,
        );
      }
  }
}

/**
 * OAuth access tokens for the MCP bench: one client registered, `count` connections (one per person, as many people
 * approving one assistant would make), each with a token pair issued as the token endpoint issues it, for the bench
 * API's server URL.
 */
async function oauthTokens(base: string, appId: string, count: number): Promise<string[]> {
  const registered = await fetch(`${base}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:33418/callback'], client_name: 'bench' }),
  });
  if (registered.status !== 201) throw new Error(`register failed: ${await registered.text()}`);
  const { client_id: clientId } = (await registered.json()) as { client_id: string };
  const em = testEnv().deps.orm.em.fork();
  const tokens: string[] = [];
  for (let i = 0; i < count; i++) {
    const connectionId = newConnectionId();
    await sql(
      em,
      `insert into mcp_connections (id, app_id, kind, name, client_id, user_id, user_name, access_level, person)
       values ($1, $2, 'oauth', 'bench', $3, $4, $4, 'read', false)`,
      [connectionId, appId, clientId, `bench_user_${i}`],
    );
    const pair = await issueTokenPair(em, connectionId, {
      familyId: newFamilyId(),
      audience: mcpResourceUrl(base, appId),
    });
    tokens.push(pair.access);
  }
  return tokens;
}
