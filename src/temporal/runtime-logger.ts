import { Runtime, type LogLevel, type LogMetadata } from '@temporalio/worker';
import type { Logger } from '../logger.js';

let installed = false;

/**
 * Sends the Temporal SDK's own log lines (worker, activities, workflow `log`) through our logger.
 * Its routine INFO lines (bundle built, worker state) become debug; warnings and errors stay.
 */
export function installTemporalLogging(logger: Logger): void {
  if (installed) return;
  installed = true;
  const log = logger.child({ component: 'temporal-sdk' });
  const to = (level: LogLevel, message: string, meta?: LogMetadata) => {
    const m = meta as Record<string, unknown> | undefined;
    if (level === 'ERROR') log.error(m, message);
    else if (level === 'WARN') log.warn(m, message);
    else if (level === 'TRACE') log.trace(m, message);
    else log.debug(m, message);
  };
  Runtime.install({
    logger: {
      log: to,
      trace: (msg, meta) => to('TRACE', msg, meta),
      debug: (msg, meta) => to('DEBUG', msg, meta),
      info: (msg, meta) => to('INFO', msg, meta),
      warn: (msg, meta) => to('WARN', msg, meta),
      error: (msg, meta) => to('ERROR', msg, meta),
    },
  });
}
