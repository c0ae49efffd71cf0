import { expect } from 'chai';
import { sql } from '../../src/db/sql.js';
import { createTestApp, seedCatalog, type TestApp } from '../helpers/factories.js';
import { get } from '../helpers/http.js';
import { serviceEnv, startApi, stopped, waitForListening, type Started } from '../helpers/processes.js';
import { freePort, testEnv } from '../helpers/servers.js';

// A destructive tool asks the person first (MCP elicitation): the question goes out on the call's event stream,
// held by one API process; the answer is a POST of its own, which a load balancer may send to another process.
// Here the suite's in-process API (A) holds the stream and a second API process (B) on the same database gets the
// answer.

const em = () => testEnv().deps.orm.em.fork();

interface Rpc {
  id?: string | number;
  method?: string;
  params?: { message?: string };
  result?: { isError?: boolean; content: { text: string }[] };
}

/** Reads server-sent events from a streamed response, one JSON-RPC message at a time. */
function events(res: Response) {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  return async function next(): Promise<Rpc | null> {
    for (;;) {
      const end = buffer.indexOf('\n\n');
      if (end >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = event
          .split('\n')
          .filter((l) => l.startsWith('data: '))
          .map((l) => l.slice(6))
          .join('\n');
        if (data) return JSON.parse(data) as Rpc;
        continue;
      }
      const { value, done } = await reader.read();
      if (done) return null;
      buffer += decoder.decode(value, { stream: true });
    }
  };
}

describe('MCP elicitation across two API processes', function () {
  this.timeout(180_000);
  let b: Started;
  let baseB: string;
  let app: TestApp;
  const baseA = () => testEnv().baseUrl;

  before(async function () {
    this.timeout(120_000);
    const port = await freePort();
    b = startApi(serviceEnv(port, { ADMIN_API_KEY: 'adm_mcp_elicitation' }));
    baseB = `http://127.0.0.1:${port}`;
    await waitForListening(b);
  });
  after(async () => {
    if (b) await stopped(b.child);
  });
  beforeEach(async () => {
    app = await createTestApp('Elicitation');
    await seedCatalog(app);
  });

  const post = (base: string, body: unknown, session?: string) =>
    fetch(`${base}/apps/${app.id}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${app.api_key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
        ...(session ? { 'mcp-session-id': session } : {}),
      },
      body: JSON.stringify(body),
    });

  /** A key session whose client declared elicitation, started on process A (one per client name). */
  async function session(name = 'asking'): Promise<string> {
    const res = await post(baseA(), {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: { elicitation: {} },
        clientInfo: { name, version: '1' },
      },
    });
    expect(res.status).to.equal(200);
    return res.headers.get('mcp-session-id')!;
  }

  /** Calls delete_plan on A: the stream's first message is the question. */
  async function askedOnA(sessionId: string, planId: string) {
    const res = await post(
      baseA(),
      { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'delete_plan', arguments: { planId } } },
      sessionId,
    );
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/event-stream/);
    const next = events(res);
    const question = (await next())!;
    expect(question.method).to.equal('elicitation/create');
    expect(question.params!.message).to.match(new RegExp(`delete_plan .* with planId "${planId}"`));
    return { id: question.id as string, next };
  }

  const answer = (id: string, result: Record<string, unknown>) => ({ jsonrpc: '2.0', id, result });
  const row = async (id: string) =>
    (
      await sql<{ status: string; answer: { action: string } | null }>(
        em(),
        'select status, answer from mcp_elicitations where id = $1',
        [id],
      )
    )[0];

  it('an answer that lands on another process is used, once, by the process holding the call', async () => {
    const sessionId = await session();
    const q = await askedOnA(sessionId, 'scale');
    expect((await row(q.id)).status).to.equal('pending');
    const res = await post(baseB, answer(q.id, { action: 'accept', content: { confirm: true } }), sessionId);
    expect(res.status).to.equal(202);
    const result = (await q.next())!;
    expect(result.id).to.equal(7);
    expect(result.result!.isError, result.result!.content[0].text).to.equal(false);
    expect(await q.next()).to.equal(null);
    expect((await get(`/apps/${app.id}/plans/scale`, app.api_key)).status).to.equal(404);
    // Consumed once: a second answer (here a decline, on either process) changes nothing.
    expect((await row(q.id)).status).to.equal('taken');
    for (const base of [baseB, baseA()])
      expect((await post(base, answer(q.id, { action: 'decline' }), sessionId)).status).to.equal(202);
    expect(await row(q.id)).to.deep.include({
      status: 'taken',
      answer: { action: 'accept', content: { confirm: true } },
    });
  });

  it("another session's answer is not taken; the asked session's decline, on process B, is", async () => {
    const sessionId = await session();
    const other = await session('another client');
    expect(other).to.not.equal(sessionId);
    const q = await askedOnA(sessionId, 'pro');
    expect((await post(baseB, answer(q.id, { action: 'accept', content: { confirm: true } }), other)).status).to.equal(
      202,
    );
    expect((await row(q.id)).status).to.equal('pending');
    expect((await post(baseB, answer(q.id, { action: 'decline' }), sessionId)).status).to.equal(202);
    const result = (await q.next())!;
    expect(result.result!.isError).to.equal(true);
    expect(result.result!.content[0].text).to.equal(
      "Not done: delete_plan needs the person's confirmation and the person chose decline. Nothing was changed.",
    );
    expect((await get(`/apps/${app.id}/plans/pro`, app.api_key)).status).to.equal(200);
  });

  it('a question past its expiry (the database clock) ends the call undone; a late answer is refused', async () => {
    const sessionId = await session();
    const q = await askedOnA(sessionId, 'scale');
    await sql(em(), `update mcp_elicitations set expires_at = now() - interval '1 second' where id = $1`, [q.id]);
    const result = (await q.next())!;
    expect(result.result!.content[0].text).to.match(/no answer came in time\. Nothing was changed\.$/);
    expect((await row(q.id)).status).to.equal('expired');
    await post(baseB, answer(q.id, { action: 'accept', content: { confirm: true } }), sessionId);
    expect(await row(q.id)).to.deep.include({ status: 'expired', answer: null });
    expect((await get(`/apps/${app.id}/plans/scale`, app.api_key)).status).to.equal(200);
  });
});
