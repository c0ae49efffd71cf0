import { pino, type Logger } from 'pino';

export type { Logger };

/** One JSON line per log record on stdout. */
export function createLogger(level: string, name = 'offerkit'): Logger {
  return pino({ name, level, base: { pid: process.pid } });
}
