// The supervisor `npm start` uses, on pieces that live in the process (the worker, the PayPal
// stand-in): a piece that stops is reported by /health as degraded, restarted with backoff, and works
// again. test/processes/startup.test.ts kills the child processes (PostgreSQL, the Temporal dev server) of a real
// `npm start`.
import http from 'node:http';
import net from 'node:net';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { PayPalStandIn } from '../../src/dev/paypal-standin.js';
import { Supervisor, workerPiece } from '../../src/supervisor.js';
import { freePort, testEnv } from '../helpers/servers.js';
import { pingDef } from '../../workflows/shared.js';

interface Line {
  msg: string;
  piece?: string;
}

/** A supervisor checking every 200 ms, its log lines, and an API whose /health reports it. */
async function supervised() {
  const lines: Line[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Line);
      cb();
    },
  });
  const supervisor = new Supervisor(pino({ level: 'info' }, sink), 200);
  const server = http.createServer(createApp({ ...testEnv().deps, degraded: () => supervisor.degraded() }).callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  const health = async () => {
    const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(5000) });
    return (await res.json()) as { ok: boolean; degraded?: string[] };
  };
  /** /health answers until `done`; every answer's degraded list. */
  const watch = async (done: () => boolean | Promise<boolean>, ms = 60_000) => {
    const seen: string[][] = [];
    const end = Date.now() + ms;
    while (!(await done())) {
      if (Date.now() > end) throw new Error(`timed out; log: ${JSON.stringify(lines)}`);
      seen.push((await health()).degraded ?? []);
      await new Promise((r) => setTimeout(r, 50));
    }
    return seen;
  };
  const close = async () => {
    supervisor.stop();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  };
  return { supervisor, lines, health, watch, close };
}

describe('supervision of in-process pieces (the supervisor npm start uses)', function () {
  this.timeout(120_000);

  it('a worker that stopped is reported degraded, restarted, and runs workflows again', async () => {
    const s = await supervised();
    const env = testEnv();
    try {
      s.supervisor.add(
        workerPiece(
          () => env.worker,
          () => env.restartWorker(),
        ),
      );
      s.supervisor.start();
      expect((await s.health()).degraded).to.equal(undefined);
      await env.stopWorker(); // as if it had failed
      const seen = await s.watch(
        () => s.lines.some((l) => l.msg === 'worker is back') && env.worker.worker.getState() === 'RUNNING',
      );
      expect(
        seen.some((d) => d.includes('worker')),
        '/health named the worker degraded',
      ).to.equal(true);
      expect(s.lines.map((l) => l.msg)).to.include.members([
        'worker is down; restarting it with backoff',
        'restarted worker',
        'worker is back',
      ]);
      expect((await s.health()).degraded).to.equal(undefined);
      const result = await env.deps.temporal.client.workflow.execute(pingDef.name, {
        taskQueue: env.config.TEMPORAL_TASK_QUEUE,
        workflowId: `diagnostics/ping/supervised-worker-${process.pid}`,
        args: [{ message: 'after the restart' }],
        workflowExecutionTimeout: '60s',
      });
      expect((result as { message: string }).message).to.equal('after the restart');
    } finally {
      await s.close();
      if (env.worker.worker.getState() !== 'RUNNING') await env.startWorker();
    }
  });

  it('the PayPal stand-in: a restart that fails is retried with backoff, degraded until it is back', async () => {
    const s = await supervised();
    const port = await freePort();
    let standIn = new PayPalStandIn({ port });
    await standIn.start();
    const blocker = net.createServer();
    try {
      s.supervisor.add({
        name: 'paypal',
        check: async () => standIn.listening,
        restart: async () => {
          await standIn.stop().catch(() => undefined);
          standIn = new PayPalStandIn({ port });
          await standIn.start();
        },
      });
      s.supervisor.start();
      await standIn.stop();
      // Something else holds the port for a while: restarts fail until it lets go.
      await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', () => resolve()));
      const blocked = await s.watch(() =>
        Promise.resolve(s.lines.filter((l) => l.msg === 'could not restart paypal; will retry').length >= 2),
      );
      expect(blocked.at(-1), 'degraded while it cannot be restarted').to.deep.equal(['paypal']);
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
      await s.watch(() => s.lines.some((l) => l.msg === 'paypal is back'));
      expect((await s.health()).degraded).to.equal(undefined);
      const token = await fetch(`${standIn.baseUrl}/v1/oauth2/token`, { method: 'POST' });
      expect(token.status, 'the restarted stand-in answers').to.equal(401);
    } finally {
      await s.close();
      if (blocker.listening) blocker.close();
      await standIn.stop();
    }
  });
});
