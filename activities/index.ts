import type { Config } from '../src/config.js';
import type { Orm } from '../src/db/orm.js';
import type { Logger } from '../src/logger.js';
import { diagnosticsActivities } from './diagnostics.js';

export interface ActivityDeps {
  orm: Orm;
  config: Config;
  logger: Logger;
}

/** Every activity the worker registers; each one calls src/ services. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...diagnosticsActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
