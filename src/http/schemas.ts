import { z } from 'zod';
import { normalizeId } from '../ids.js';
import { depthExceeds } from './validate.js';

/** What a caller-chosen id must hold (and no NUL character, which every input is checked for first). */
export const CALLER_ID_PATTERN = '^[^\\u0000]*[A-Za-z0-9_ ][^\\u0000]*$';

/**
 * A caller-chosen id (plans, entitlements, add-ons, incentives, offers, cancel flows), normalized. It must hold
 * an ASCII letter, digit, underscore or space (what normalization keeps); the pattern says so in the document.
 */
export const callerIdText = z
  .string()
  .max(200)
  .regex(/[A-Za-z0-9_ ]/, 'must contain a letter, a digit or an underscore')
  .meta({ pattern: CALLER_ID_PATTERN });
export const callerId = callerIdText.transform(normalizeId);

/** What the OpenAPI document gives as the form of an http(s) URL: scheme, a host name, a port, a path. */
export const HTTP_URL_PATTERN =
  '^https?://[a-z][a-z0-9-]*(\\.[a-z][a-z0-9-]*)*(:[1-9][0-9]{0,3})?(/[A-Za-z0-9._~/-]*)?$';

// eslint-disable-next-line no-control-regex -- finding control characters is the point
const UNSAFE_IN_ACCOUNT_ID = /[\u0000-\u001f\u202a-\u202e\u2066-\u2069]/;

const UNSAFE_CLASS = '\\u0000-\\u001f\\u202a-\\u202e\\u2066-\\u2069';
/** What `String.prototype.trim` removes, besides the control characters already refused. */
const SPACE_CLASS = ' \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff';
/** The account id rule below as a pattern, so the document (and a generator following it) states it. */
export const ACCOUNT_ID_PATTERN = `^[^${UNSAFE_CLASS}]*[^${UNSAFE_CLASS}${SPACE_CLASS}][^${UNSAFE_CLASS}]*$`;

/**
 * Account ids are kept exactly as sent, but never hold control characters (U+0000 to U+001F) or
 * bidirectional overrides and isolates (U+202A to U+202E, U+2066 to U+2069), and are not only whitespace.
 */
export const accountId = z
  .string()
  .min(1, 'must not be empty')
  .max(255)
  .refine((v) => !UNSAFE_IN_ACCOUNT_ID.test(v), 'must not contain control or bidirectional-override characters')
  .refine((v) => v.trim() !== '', 'must not be only whitespace')
  .meta({ pattern: ACCOUNT_ID_PATTERN });

export const limitValue = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullable();

export const timestamp = z.iso.datetime({ offset: true }).transform((v) => new Date(v));

/** How far ahead of the service's clock a reported moment may be: clock skew between hosts, not more. */
export const FUTURE_SKEW_MINUTES = 5;
/** How far back reported usage (and imported history) may go. */
export const HISTORY_YEARS = 5;

/**
 * Why a reported moment (a usage event's time, an imported row's `created_at`) is outside the window the service
 * takes, or null: at most HISTORY_YEARS back and FUTURE_SKEW_MINUTES ahead of the service's clock. A timestamp in 1970
 * would stretch every all-time chart over decades, one in 2999 would sit in the future of every report.
 */
export function outsideHistoryWindow(at: Date, now = new Date()): string | null {
  const earliest = new Date(now);
  earliest.setUTCFullYear(earliest.getUTCFullYear() - HISTORY_YEARS);
  const latest = new Date(now.getTime() + FUTURE_SKEW_MINUTES * 60_000);
  if (at >= earliest && at <= latest) return null;
  return (
    `must be within the last ${HISTORY_YEARS} years and at most ${FUTURE_SKEW_MINUTES} minutes ahead of the ` +
    `service's clock (now ${now.toISOString()})`
  );
}

/** A date-time in the history window (see outsideHistoryWindow), as a Date. */
export const historyTimestamp = z.iso.datetime({ offset: true }).transform((v, ctx) => {
  const at = new Date(v);
  const problem = outsideHistoryWindow(at);
  if (problem) {
    ctx.addIssue({ code: 'custom', message: problem });
    return z.NEVER;
  }
  return at;
});

export const deleted = (id: string) => ({ deleted: true as const, id });
export const deletedSchema = z.object({ deleted: z.literal(true), id: z.string() });

/** An absolute http(s) URL (the document states a simple form of the rule, which every URL it matches passes). */
export const httpUrl = z
  .string()
  .trim()
  .max(2000)
  .refine((v) => URL.canParse(v) && /^https?:$/.test(new URL(v).protocol), 'must be an http(s) URL')
  .meta({ pattern: HTTP_URL_PATTERN });

/** Limits of stored free-form JSON (plan meta, extra pricing card keys, agent thread messages). */
export const FREE_JSON_DEPTH = 10;

/**
 * Free-form JSON that is stored and sent on (in reads and webhook payloads): at most `depth` levels of arrays and
 * objects inside the field and `bytes` of JSON text, so what is re-sent stays readable by ordinary receivers.
 */
export function boundedJson<S extends z.ZodType>(schema: S, bytes: number, depth = FREE_JSON_DEPTH) {
  return schema.superRefine((value, ctx) => {
    if (depthExceeds(value, depth)) {
      ctx.addIssue({ code: 'custom', message: `must not nest arrays and objects deeper than ${depth} levels` });
      return;
    }
    if (Buffer.byteLength(JSON.stringify(value) ?? '') > bytes)
      ctx.addIssue({ code: 'custom', message: `must be at most ${bytes} bytes as JSON` });
  });
}
