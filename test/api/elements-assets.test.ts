import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import zlib from 'node:zlib';
import { expect } from 'chai';
import { build } from '../../packages/elements/build.js';
import { testEnv } from '../helpers/servers.js';

const BUNDLE = path.resolve('packages/elements/dist/offerkit-elements.js');

/** A GET whose bytes arrive as sent (no client-side decompression), with the headers given. */
function raw(p: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
    http
      .get(new URL(p, testEnv().baseUrl), { headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      })
      .on('error', reject);
  });
}

describe('the components bundle as browsers get it', function () {
  this.timeout(120_000);
  let file: Buffer;
  before(async () => {
    if (!fs.existsSync(BUNDLE)) await build();
    file = fs.readFileSync(BUNDLE);
  });

  it('compressed as the browser accepts: br first, then gzip, else as it is; the same bytes once decoded', async () => {
    const url = '/elements/assets/offerkit-elements.js';
    const br = await raw(url, { 'Accept-Encoding': 'gzip, deflate, br' });
    expect(br.status).to.equal(200);
    expect(br.headers['content-encoding']).to.equal('br');
    expect(br.headers.vary).to.match(/Accept-Encoding/i);
    expect(br.headers['content-type']).to.match(/^application\/javascript/);
    expect(br.body.length, 'smaller than a third').to.be.below(file.length / 3);
    expect(zlib.brotliDecompressSync(br.body).equals(file)).to.equal(true);

    const gz = await raw(url, { 'Accept-Encoding': 'gzip' });
    expect(gz.headers['content-encoding']).to.equal('gzip');
    expect(zlib.gunzipSync(gz.body).equals(file)).to.equal(true);

    const plain = await raw(url);
    expect(plain.headers['content-encoding']).to.equal(undefined);
    expect(plain.body.equals(file)).to.equal(true);
    // One ETag for the content, whatever the encoding.
    expect(br.headers.etag).to.match(/^"[0-9a-f]{32}"$/);
    expect(gz.headers.etag).to.equal(br.headers.etag);
    expect(plain.headers.etag).to.equal(br.headers.etag);
  });

  it('the stable name is revalidated: 304 without a body when the ETag matches, 200 when it does not', async () => {
    const url = '/elements/assets/offerkit-elements.js';
    const first = await raw(url, { 'Accept-Encoding': 'br' });
    expect(first.headers['cache-control']).to.equal('public, max-age=0, must-revalidate');
    const again = await raw(url, { 'Accept-Encoding': 'br', 'If-None-Match': first.headers.etag! });
    expect(again.status).to.equal(304);
    expect(again.body.length).to.equal(0);
    expect(again.headers.etag).to.equal(first.headers.etag);
    const list = await raw(url, { 'If-None-Match': `"other", W/${first.headers.etag!}` });
    expect(list.status, 'a weak form in a list matches too').to.equal(304);
    const stale = await raw(url, { 'If-None-Match': '"0123456789abcdef0123456789abcdef"' });
    expect(stale.status).to.equal(200);
    expect(stale.body.equals(file)).to.equal(true);
  });

  it('the content-hashed name is cached for a year; a name of another build is 404', async () => {
    const etag = (await raw('/elements/assets/offerkit-elements.js')).headers.etag!;
    const hash = etag.slice(1, 11);
    const hashed = await raw(`/elements/assets/offerkit-elements.${hash}.js`, { 'Accept-Encoding': 'gzip' });
    expect(hashed.status).to.equal(200);
    expect(hashed.headers['cache-control']).to.equal('public, max-age=31536000, immutable');
    expect(zlib.gunzipSync(hashed.body).equals(file)).to.equal(true);
    const other = hash === '0000000000' ? '1111111111' : '0000000000';
    expect((await raw(`/elements/assets/offerkit-elements.${other}.js`)).status).to.equal(404);
    expect((await raw('/elements/assets/nothing.js')).status).to.equal(404);
  });

  it("a page's script may read the retry time, the rate limit, the replay flag and the request id (CORS)", async () => {
    const res = await raw('/health', { Origin: 'https://shop.example' });
    const exposed = String(res.headers['access-control-expose-headers'])
      .split(',')
      .map((h) => h.trim().toLowerCase());
    expect(exposed).to.include.members([
      'retry-after',
      'ratelimit-limit',
      'ratelimit-remaining',
      'ratelimit-reset',
      'idempotent-replayed',
      'x-request-id',
    ]);
  });
});
