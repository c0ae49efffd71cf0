// Starts only a Temporal worker (and the outbox relay) against DATABASE_URL and TEMPORAL_ADDRESS.
// Run several for throughput; Temporal spreads the task queue across them.
import { loadConfig } from './config.js';
import { createLogger } from './logger.js';
import { closeDeps, createWorker, onShutdown, openDeps, resolveAdminKey } from './runtime.js';

const config = loadConfig();
const logger = createLogger(config.LOG_LEVEL, 'offerkit', config.LOG_FORMAT);

async function main() {
  const deps = await openDeps(config, logger, resolveAdminKey(config).key);
  const worker = await createWorker(deps);
  deps.outbox.start();
  logger.info({ taskQueue: config.TEMPORAL_TASK_QUEUE }, 'worker running');
  onShutdown(logger, async () => {
    await worker.shutdown();
    await closeDeps(deps);
  });
  await worker.done;
}

main().catch((err) => {
  logger.fatal({ err }, 'worker failed');
  process.exit(1);
});
