import { Runtime, type LogLevel, type LogMetadata } from '@temporalio/worker';
import type { Logger } from '../logger.js';

let installed = false;

/** Fields of a forwarded record that say nothing to a reader of our log (the SDK's own bookkeeping). */
const DROPPED = new Set(['sdkComponent', 'spanContexts']);

/**
 * Sends the Temporal SDK's own log lines through our logger, in its format (JSON or pretty): the TypeScript side's
 * (worker, activities, workflow `log`) and, forwarded, the native core's (the Rust SDK core and its gRPC client: a
 * slow workflow task's `[TMPRL1104]`, a poll's `gRPC call ... retried 6 times` while Temporal is unreachable), which
 * the SDK otherwise writes straight to stdout in a format of its own, colours included, beside our JSON lines. The
 * core's records come at `coreLevel` and above (WARN, the SDK's default) with their `target`
 * (`temporalio_client::retry`); routine INFO lines of the TypeScript side become debug; warnings and errors stay.
 */
export function installTemporalLogging(logger: Logger, coreLevel: LogLevel = 'WARN'): void {
  if (installed) return;
  installed = true;
  const log = logger.child({ component: 'temporal-sdk' });
  const to = (level: LogLevel, message: string, meta?: LogMetadata) => {
    let m = meta as Record<string, unknown> | undefined;
    if (m && Object.keys(m).some((k) => DROPPED.has(k)))
      m = Object.fromEntries(Object.entries(m).filter(([k]) => !DROPPED.has(k)));
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
    // Forwarded rather than printed by the core's own console writer.
    telemetryOptions: { logging: { forward: {}, filter: { core: coreLevel, other: 'ERROR' } } },
  });
}
