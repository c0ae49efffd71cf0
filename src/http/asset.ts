// Files served to browsers (the components' bundle): compressed as the browser accepts (br, gzip), with a strong
// ETag so a revalidation is a 304, and long caching for a content-hashed name. Each file's variants are made once
// per content and kept, so serving costs no compression per request.
import { createHash } from 'node:crypto';
import zlib from 'node:zlib';
import Negotiator from 'negotiator';
import { Reply } from './route.js';

interface Variants {
  etag: string;
  /** The first 10 hex digits of the content's SHA-256: the hashed file name's part. */
  hash: string;
  identity: Buffer;
  br?: Buffer;
  gzip?: Buffer;
}

/** negotiator 1.x's `encoding` (its `preferred` option is newer than its published types). */
interface EncodingNegotiator {
  encoding(available: string[], options?: { preferred?: string[] }): string | undefined;
}

const cache = new WeakMap<Buffer, Variants>();
/** Smaller files are not worth compressing (a header costs more than it saves). */
const MIN_COMPRESS = 1024;

export function variantsOf(body: Buffer, compressible: boolean): Variants {
  let v = cache.get(body);
  if (!v) {
    const digest = createHash('sha256').update(body).digest('hex');
    v = { etag: `"${digest.slice(0, 32)}"`, hash: digest.slice(0, 10), identity: body };
    if (compressible && body.length >= MIN_COMPRESS) {
      v.br = zlib.brotliCompressSync(body, {
        params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length },
      });
      v.gzip = zlib.gzipSync(body, { level: 9 });
    }
    cache.set(body, v);
  }
  return v;
}

/** Whether `If-None-Match` names this ETag (a list, weak forms and `*` included, as RFC 9110 13.1.2 reads it). */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === '*') return true;
  return ifNoneMatch.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
}

/**
 * The answer for a file: 304 when the browser's copy is current, else the file in the best encoding it accepts.
 * `immutable`: the URL names this content (a hashed name), cached for a year; otherwise the browser revalidates
 * each time (cheap: a 304 without a body).
 */
export function assetReply(
  body: Buffer,
  type: string,
  requestHeaders: Record<string, string | undefined>,
  opts: { immutable?: boolean } = {},
): Reply<Buffer | null> {
  const compressible = /^(text\/|application\/(javascript|json))/.test(type);
  const v = variantsOf(body, compressible);
  const headers: Record<string, string> = {
    ETag: v.etag,
    'Cache-Control': opts.immutable ? 'public, max-age=31536000, immutable' : 'public, max-age=0, must-revalidate',
    ...(v.br ? { Vary: 'Accept-Encoding' } : {}),
  };
  if (matches(requestHeaders['if-none-match'], v.etag)) return new Reply(304, null, headers);
  const encoding = v.br
    ? (
        new Negotiator({
          headers: { 'accept-encoding': requestHeaders['accept-encoding'] ?? 'identity' },
        }) as unknown as EncodingNegotiator
      ).encoding(
        ['br', 'gzip', 'identity'],
        // Among encodings the browser likes as much, the smallest.
        { preferred: ['br', 'gzip', 'identity'] },
      )
    : 'identity';
  if (encoding === 'br' && v.br) return new Reply(200, v.br, { ...headers, 'Content-Encoding': 'br' }, type);
  if (encoding === 'gzip' && v.gzip) return new Reply(200, v.gzip, { ...headers, 'Content-Encoding': 'gzip' }, type);
  return new Reply(200, v.identity, headers, type);
}
