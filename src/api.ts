// Starts only the HTTP API against DATABASE_URL and TEMPORAL_ADDRESS (or the embedded defaults'
// addresses). Run as many as you need behind a load balancer, or on one host with API_REUSE_PORT=true, which
// lets them share PORT.
import { loadConfig } from './config.js';
import { createLogger } from './logger.js';
import { closeDeps, closeServer, listen, onShutdown, openDeps, resolveAdminKey } from './runtime.js';

const config = loadConfig();
const logger = createLogger(config.LOG_LEVEL, 'offerkit', config.LOG_FORMAT);

async function main() {
  const deps = await openDeps(config, logger, resolveAdminKey(config).key);
  const server = await listen(deps);
  logger.info({ port: config.PORT }, 'API listening');
  onShutdown(logger, async () => {
    await closeServer(server);
    await closeDeps(deps);
  });
}

main().catch((err) => {
  logger.fatal({ err }, 'API start-up failed');
  process.exit(1);
});
