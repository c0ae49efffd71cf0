import { z } from 'zod';
import { normalizeId } from '../ids.js';

/** A caller-chosen id (plans, entitlements, add-ons, incentives, offers, cancel flows), normalized. */
export const callerId = z
  .string()
  .max(200)
  .transform(normalizeId)
  .refine((v) => v.length > 0, 'must contain a letter, a digit or an underscore');

// eslint-disable-next-line no-control-regex -- finding control characters is the point
const UNSAFE_IN_ACCOUNT_ID = /[\u0000-\u001f\u202a-\u202e\u2066-\u2069]/;

/**
 * Account ids are kept exactly as sent, but never hold control characters (U+0000 to U+001F) or
 * bidirectional overrides and isolates (U+202A to U+202E, U+2066 to U+2069), and are not only whitespace.
 */
export const accountId = z
  .string()
  .min(1, 'must not be empty')
  .max(255)
  .refine((v) => !UNSAFE_IN_ACCOUNT_ID.test(v), 'must not contain control or bidirectional-override characters')
  .refine((v) => v.trim() !== '', 'must not be only whitespace');

export const limitValue = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullable();

export const timestamp = z.iso.datetime({ offset: true }).transform((v) => new Date(v));

export const deleted = (id: string) => ({ deleted: true as const, id });
export const deletedSchema = z.object({ deleted: z.literal(true), id: z.string() });

/** An absolute http(s) URL. */
export const httpUrl = z
  .string()
  .trim()
  .refine((v) => URL.canParse(v) && /^https?:$/.test(new URL(v).protocol), 'must be an http(s) URL');
