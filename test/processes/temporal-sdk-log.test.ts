// The Temporal SDK's own warnings come out in the service's log format (issue 39, item 8): a worker process whose
// Temporal went away logs the SDK core's gRPC retries as JSON records of its own logger, not as lines of their own.
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { startTemporalDevServer, ensureTemporalCli } from '../../src/temporal/devserver.js';
import { createLogger } from '../../src/logger.js';
import { serviceEnv, startWorker, stopped, waitForOutput } from '../helpers/processes.js';
import { freePort, tempDir } from '../helpers/servers.js';

describe("the Temporal SDK's own warnings, in the service's log format", function () {
  this.timeout(120_000);

  it("a worker whose Temporal went away logs the SDK's gRPC retries as JSON records of its own logger", async () => {
    const quiet = createLogger('silent');
    const dir = tempDir('offerkit-sdk-log-');
    const temporal = await startTemporalDevServer({
      cli: ensureTemporalCli(process.env.TEMPORAL_CLI, quiet),
      port: await freePort(),
      uiPort: null,
      namespace: 'default',
      logger: quiet,
    });
    const env = serviceEnv(await freePort(), {
      ADMIN_API_KEY: 'adm_sdk_log',
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_TASK_QUEUE: `offerkit-sdk-log-${process.pid}`,
      LOG_FORMAT: 'json',
    });
    const worker = startWorker(env);
    try {
      await waitForOutput(worker, 'worker running', 60_000);
      await temporal.stop();
      // The SDK core retries its polls and says so at WARN (`gRPC call poll_... retried 6 times`).
      await waitForOutput(worker, 'retried', 60_000);
      const lines = worker
        .output()
        .split('\n')
        .filter((l) => l.trim());
      const notJson = lines.filter((l) => {
        try {
          JSON.parse(l);
          return false;
        } catch {
          return true;
        }
      });
      expect(notJson, 'every line is a JSON record').to.deep.equal([]);
      const retry = lines
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((r) => /retried/.test(String(r.msg)));
      expect(retry).to.deep.include({ level: 40, component: 'temporal-sdk' });
      expect(String(retry!.target)).to.match(/^temporalio_client/);
    } finally {
      await stopped(worker.child);
      await temporal.stop().catch(() => undefined);
      fs.rmSync(path.join(dir), { recursive: true, force: true });
    }
  });
});
