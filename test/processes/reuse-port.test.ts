import http from 'node:http';
import { expect } from 'chai';
import { exited, serviceEnv, startApi, stopped, waitForListening, type Started } from '../helpers/processes.js';
import { freePort } from '../helpers/servers.js';

/** GET /health on a connection of its own (no keep-alive), so the kernel places each request anew. */
function healthOnNewConnection(port: number, requestId: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(
        { host: '127.0.0.1', port, path: '/health', agent: false, headers: { 'X-Request-Id': requestId } },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      )
      .on('error', reject);
  });
}

describe('API_REUSE_PORT: several API processes on one port', function () {
  this.timeout(180_000);
  const procs: Started[] = [];
  let port: number;
  const env = (reuse: boolean) => serviceEnv(port, { ADMIN_API_KEY: 'adm_reuse_port', API_REUSE_PORT: String(reuse) });

  before(async () => {
    port = await freePort();
  });
  after(async () => {
    await Promise.all(procs.map((p) => stopped(p.child)));
  });

  it('two processes share the port, connections reach both, and one alone goes on answering', async () => {
    procs.push(startApi(env(true)));
    await waitForListening(procs[0]);
    procs.push(startApi(env(true)));
    await waitForListening(procs[1]);

    const ids = Array.from({ length: 24 }, (_, i) => `reuse-${Date.now()}-${i}`);
    for (const id of ids) expect(await healthOnNewConnection(port, id)).to.equal(200);
    // Each request's log line (with its request id) is in the output of the process that answered it; a line can
    // reach us a little after its answer (the child's stdout is a pipe), so wait for all of them first.
    const logged = () => ids.every((id) => procs.some((p) => p.output().includes(id)));
    for (const end = Date.now() + 10_000; !logged() && Date.now() < end;) await new Promise((r) => setTimeout(r, 50));
    const answeredBy = ids.map((id) => procs.findIndex((p) => p.output().includes(id)));
    expect(answeredBy, 'every request answered by exactly one process').to.not.include(-1);
    expect(new Set(answeredBy).size, 'the kernel spread the connections over both processes').to.equal(2);

    await stopped(procs[0].child);
    for (const id of ids.slice(0, 6).map((x) => `${x}-after`))
      expect(await healthOnNewConnection(port, id)).to.equal(200);
  });

  it('without it, a second process on a taken port exits and says why', async () => {
    const taken = startApi(env(false));
    procs.push(taken);
    expect(await exited(taken)).to.not.equal(0);
    expect(taken.output()).to.match(/EADDRINUSE/);
  });
});
