import { createRequire } from 'node:module';
import { pino, type Logger } from 'pino';

/** pino-pretty, loaded only for the pretty format (a process logging JSON never loads it). */
const prettyStream = (): typeof import('pino-pretty').PinoPretty =>
  (createRequire(import.meta.url)('pino-pretty') as typeof import('pino-pretty')).PinoPretty;

export type { Logger };

/** How log records are written: `json` (one object per line), `pretty` (short lines for a person), `auto`. */
export type LogFormat = 'auto' | 'json' | 'pretty';

/** `auto`: short readable lines when stdout is a terminal, JSON otherwise (a pipe, a file, a log collector). */
export const resolveLogFormat = (format: LogFormat, isTty = Boolean(process.stdout.isTTY)): 'json' | 'pretty' =>
  format === 'auto' ? (isTty ? 'pretty' : 'json') : format;

/** Fields every record carries, or shown elsewhere in a pretty line. */
const SHOWN = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'component', 'err']);
const REQUEST = ['method', 'path', 'status', 'durationMs', 'requestId'];

/** One field as `key=value`: short values in full, lists and objects summed up. */
function field(key: string, value: unknown): string {
  if (Array.isArray(value)) return `${key}=[${value.length}]`;
  if (value && typeof value === 'object') {
    const text = JSON.stringify(value);
    return `${key}=${text.length > 80 ? `${text.slice(0, 77)}...` : text}`;
  }
  const text = String(value);
  return `${key}=${/\s/.test(text) ? JSON.stringify(text) : text}`;
}

/**
 * A record as one short line: `[component] message: error key=value ...`; a request as `METHOD /path status 12ms`;
 * an error's stack on the lines after it (error and fatal only).
 */
export function prettyMessage(log: Record<string, unknown>): string {
  const parts: string[] = [];
  if (typeof log.component === 'string') parts.push(`[${log.component}]`);
  const request = log.msg === 'request' && typeof log.method === 'string';
  const err = log.err as { message?: string; stack?: string } | undefined;
  if (request) {
    parts.push(`${String(log.method)} ${String(log.path)} ${String(log.status)} ${String(log.durationMs)}ms`);
  } else parts.push(err?.message ? `${String(log.msg ?? '')}: ${err.message}` : String(log.msg ?? ''));
  for (const [key, value] of Object.entries(log)) {
    if (SHOWN.has(key) || value === undefined || (request && REQUEST.includes(key))) continue;
    parts.push(field(key, value));
  }
  const stack = typeof log.level === 'number' && log.level >= 50 && err?.stack ? `\n${err.stack}` : '';
  return parts.join(' ') + stack;
}

/**
 * The service's logger. JSON: one object per record on stdout (pino's own format). Pretty: one short line per
 * record, `HH:MM:ss LEVEL message`, through pino-pretty (synchronously, so the start-up banner comes after the
 * lines logged before it).
 */
export function createLogger(level: string, name = 'offerkit', format: LogFormat = 'json'): Logger {
  const options = { name, level, base: { pid: process.pid } };
  if (resolveLogFormat(format) === 'json') return pino(options);
  return pino(
    options,
    prettyStream()({
      sync: true,
      colorize: Boolean(process.stdout.isTTY),
      translateTime: 'SYS:HH:MM:ss',
      hideObject: true,
      ignore: 'pid,hostname,name',
      messageFormat: (log) => prettyMessage(log),
    }),
  );
}
