import { parse as parseJson } from '@hapi/bourne';
import type { Context, Middleware } from 'koa';
import { isUtf8 } from 'node:buffer';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import getRawBody from 'raw-body';
import { AppError, badRequest } from '../errors.js';
import type { RawBody, Reply } from './route.js';
import { illFormedMessage, jsonDepthExceeds, MAX_JSON_DEPTH } from './validate.js';

/** Methods whose body is read (a DELETE's body is not: no route takes one). */
const PARSED = new Set(['POST', 'PUT', 'PATCH']);
/** The 400 of a body that is not JSON (the MCP endpoint answers it as JSON-RPC's parse error, -32700). */
export const INVALID_JSON_BODY = 'Invalid JSON body';
/** JSON's insignificant whitespace, then an object or an array: a bare string or number is not a body. */
const JSON_OBJECT_OR_ARRAY = /^[ \t\n\r]*[[{]/;

/**
 * The offset of the first byte that does not belong to valid UTF-8 (overlong forms, surrogates and code points past
 * U+10FFFF included, as WHATWG's decoder refuses them), or -1. Only called once `isUtf8` said no, to name the place.
 */
export function invalidUtf8At(bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length;) {
    const b = bytes[i];
    const [n, lo, hi] =
      b < 0x80
        ? [0, 0, 0]
        : b >= 0xc2 && b <= 0xdf
          ? [1, 0x80, 0xbf]
          : b === 0xe0
            ? [2, 0xa0, 0xbf]
            : b === 0xed
              ? [2, 0x80, 0x9f]
              : b >= 0xe1 && b <= 0xef
                ? [2, 0x80, 0xbf]
                : b === 0xf0
                  ? [3, 0x90, 0xbf]
                  : b === 0xf4
                    ? [3, 0x80, 0x8f]
                    : b >= 0xf1 && b <= 0xf3
                      ? [3, 0x80, 0xbf]
                      : [-1, 0, 0];
    if (n < 0) return i;
    if (n > 0) {
      if (i + n >= bytes.length) return i;
      if (bytes[i + 1] < lo || bytes[i + 1] > hi) return i;
      for (let k = 2; k <= n; k++) if (bytes[i + k] < 0x80 || bytes[i + k] > 0xbf) return i;
    }
    i += n + 1;
  }
  return -1;
}

/**
 * Bytes as text, refusing what is not UTF-8: a decoder that replaces bad bytes with U+FFFD would let two different
 * byte strings become one id (the second a 409) or one stored value.
 */
export function utf8Text(bytes: Buffer, what: string): string {
  if (!isUtf8(bytes))
    throw badRequest(`${what}: must be UTF-8 text (the byte at offset ${invalidUtf8At(bytes)} is not valid UTF-8)`);
  return bytes.toString('utf8');
}

/** The request's bytes as sent: decompressed per `Content-Encoding` (gzip, deflate, br), else 415. */
function decodedStream(ctx: Context): Readable {
  const encoding = (ctx.get('Content-Encoding') || 'identity').trim().toLowerCase();
  if (encoding === 'identity') return ctx.req;
  const decompress =
    encoding === 'gzip' || encoding === 'deflate'
      ? zlib.createUnzip()
      : encoding === 'br'
        ? zlib.createBrotliDecompress()
        : null;
  if (!decompress) throw new AppError(415, 'Unsupported body encoding');
  return ctx.req.pipe(decompress);
}

/**
 * A form (`application/x-www-form-urlencoded`) as flat fields. Stricter than a browser's parser, as JSON bodies are:
 * an escape that is not UTF-8 (`%FF`), a field given twice (RFC 6749 3.2: "MUST NOT be included more than once") and
 * a field named `__proto__` (refused in JSON too) are a 400 naming the field, never a replacement character or a
 * silently dropped value.
 */
export function parseForm(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const part of text.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const [rawName, rawValue] = eq < 0 ? [part, ''] : [part.slice(0, eq), part.slice(eq + 1)];
    const decode = (s: string) => {
      try {
        return decodeURIComponent(s.replaceAll('+', ' '));
      } catch {
        return null;
      }
    };
    const name = decode(rawName);
    if (name === null) throw badRequest(`${rawName}: the field name is not percent-encoded UTF-8`);
    const value = decode(rawValue);
    if (value === null) throw badRequest(`${name}: must be percent-encoded UTF-8 text`);
    if (name === '__proto__') throw badRequest('__proto__: unknown field');
    if (Object.hasOwn(fields, name)) throw badRequest(`${name}: given more than once`);
    fields[name] = value;
  }
  return fields;
}

export interface BodyOptions {
  /** Forms are taken besides JSON. */
  form?: boolean;
  /** An OAuth endpoint: a 400 is OAuth's `{ error: "invalid_request", error_description }`. */
  oauth?: boolean;
  /** The route answers invalid input with a page of its own (the consent pages): a 400 is that page. */
  page?: (message: string) => Reply<RawBody>;
}

/**
 * The request body parser of every route that takes one: JSON (and forms where the route takes them), UTF-8 only, at
 * most `limit` bytes after decompression, nested at most MAX_JSON_DEPTH levels, and without lone surrogates. Sets
 * `ctx.request.body` and `ctx.request.rawBody` (the text, for routes that verify signatures). A 400 is the route's
 * page, OAuth's `invalid_request`, or the usual `{ error }`.
 */
export function requestBody(limit: string, opts: BodyOptions = {}): Middleware {
  const form = opts.form === true;
  return async (ctx, next) => {
    try {
      await readBody(ctx, limit, form, opts.oauth === true);
    } catch (err) {
      if (!(err instanceof AppError) || err.status !== 400 || !opts.page) throw err;
      return answerPage(ctx, opts.page(String(err.extra?.error_description ?? err.message)));
    }
    await next();
  };
}

/** Sends a route's own page for a request it cannot read (see RouteDef.invalidInput). */
export function answerPage(ctx: Context, reply: Reply<RawBody>): void {
  ctx.status = reply.status;
  for (const [k, v] of Object.entries(reply.headers)) ctx.set(k, v);
  if (reply.contentType) ctx.type = reply.contentType;
  ctx.body = reply.body;
}

/** Reads and parses the body into `ctx.request` (nothing for a method without one or a body of no known type). */
async function readBody(ctx: Context, limit: string, form: boolean, oauth: boolean): Promise<void> {
  const length = Number(ctx.get('Content-Length') || 0);
  const chunked = ctx.get('Transfer-Encoding') !== '';
  const json = ctx.is('application/json', 'application/*+json') !== false;
  const isForm = form && ctx.is('application/x-www-form-urlencoded') !== false;
  if ((length > 0 || chunked) && !json && !isForm)
    throw new AppError(
      415,
      form
        ? 'Content-Type must be application/json or application/x-www-form-urlencoded'
        : 'Content-Type must be application/json',
    );
  if (!PARSED.has(ctx.method) || (!json && !isForm)) return;
  const refuse = (message: string) =>
    oauth ? new AppError(400, 'invalid_request', { error_description: message }) : badRequest(message);
  let bytes: Buffer;
  try {
    const identity = (ctx.get('Content-Encoding') || 'identity').trim().toLowerCase() === 'identity';
    bytes = await getRawBody(decodedStream(ctx), { limit, length: identity && length > 0 ? length : null });
  } catch (err) {
    if (err instanceof AppError) throw err;
    const e = err as { status?: number; type?: string };
    if (e.status === 413 || e.type === 'entity.too.large')
      throw new AppError(413, `Request body too large (limit ${limit})`);
    if (e.type === 'request.aborted') throw new AppError(400, 'The request body was cut short');
    // A body shorter or longer than its Content-Length, or a corrupt compressed stream.
    throw refuse('body: could not be read (its length or compression is not what the headers say)');
  }
  let text: string;
  try {
    text = utf8Text(bytes, 'body');
  } catch (err) {
    throw refuse((err as Error).message);
  }
  let parsed: unknown;
  if (isForm) {
    try {
      parsed = parseForm(text);
    } catch (err) {
      throw refuse((err as Error).message);
    }
  } else {
    // Bounded nesting, checked on the text before anything walks the parsed value.
    if (jsonDepthExceeds(text)) throw refuse(`body: JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
    if (text === '') parsed = {};
    else {
      if (!JSON_OBJECT_OR_ARRAY.test(text)) throw refuse(INVALID_JSON_BODY);
      try {
        // A `__proto__` key is refused (bourne), as in forms.
        parsed = parseJson(text, { protoAction: 'error' });
      } catch {
        throw refuse(INVALID_JSON_BODY);
      }
    }
  }
  // Set before the check below: the MCP endpoint's refusal answers under the message's JSON-RPC id (mcp-guard.ts).
  ctx.request.body = parsed;
  // Text that is not valid Unicode (a lone surrogate, `"\ud800"`), in any string or key: every body, MCP included.
  const illFormed = illFormedMessage(parsed, text);
  if (illFormed) throw refuse(illFormed);
  (ctx.request as { rawBody?: string }).rawBody = text;
}
