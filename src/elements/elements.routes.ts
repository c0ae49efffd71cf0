import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { assetReply, variantsOf } from '../http/asset.js';
import { notFound } from '../errors.js';
import { Reply, route, type RouteDef } from '../http/route.js';
import { PROJECT_ROOT } from '../root.js';

// The drop-in components (packages/elements), built by `npm run build:elements` (run before `npm start`).
const pkg = path.join(PROJECT_ROOT, 'packages', 'elements');
const FILES: Record<string, { type: string; file: string }> = {
  'offerkit-elements.js': { type: 'application/javascript', file: 'dist/offerkit-elements.js' },
  'offerkit-elements.js.map': { type: 'application/json', file: 'dist/offerkit-elements.js.map' },
  'example.js': { type: 'application/javascript', file: 'dist/example.js' },
};

/** Each file as last read, kept while its size and time of change stay the same (a rebuild replaces it). */
const files = new Map<string, { mtimeMs: number; size: number; body: Buffer }>();

function read(file: string): Buffer | null {
  try {
    const full = path.join(pkg, file);
    const stat = fs.statSync(full);
    const known = files.get(full);
    if (known && known.mtimeMs === stat.mtimeMs && known.size === stat.size) return known.body;
    const body = fs.readFileSync(full);
    files.set(full, { mtimeMs: stat.mtimeMs, size: stat.size, body });
    return body;
  } catch {
    return null;
  }
}

/** `offerkit-elements.<hash>.js`: the bundle under a name that changes with its content (cached for a year). */
const HASHED = /^offerkit-elements\.([0-9a-f]{10})\.js$/;

/** The bundle's content-hashed file name, for pages that pin this build (the stable name revalidates instead). */
export function hashedBundleName(): string | null {
  const body = read(FILES['offerkit-elements.js'].file);
  return body ? `offerkit-elements.${variantsOf(body, true).hash}.js` : null;
}

/** The example page of the drop-in components and their bundle, served so a newcomer can click through them. */
export const elementsRoutes: RouteDef[] = [
  route({
    method: 'GET',
    path: '/elements',
    sdk: 'service.elementsExample',
    auth: ['N'],
    tags: ['Service'],
    summary: 'Example page of the drop-in components (pricing table, paywall, cancel flow, usage meter)',
    description:
      'Query `app`, `key` (publishable key), `account`, `account_token`, `offer`, `fallback`, `ref`, ' +
      '`flow`, `entitlement` say what the components show.',
    replies: { 200: { description: 'The example page', contentType: 'text/html' } },
    handler: () => {
      const page = read('example/index.html');
      if (!page) throw notFound('Example page');
      return new Reply(200, page, { 'Cache-Control': 'no-cache' }, 'text/html; charset=utf-8');
    },
  }),
  route({
    method: 'GET',
    path: '/elements/assets/:file',
    sdk: 'service.elementsAsset',
    auth: ['N'],
    tags: ['Service'],
    summary: 'The components bundle (one ES module) and the example page script',
    description:
      '404 until the package is built (`npm run build:elements`, which `npm start` runs first). Compressed (br or ' +
      'gzip) as the browser accepts, with an ETag: `offerkit-elements.js` is revalidated on each load (304 when ' +
      'unchanged); `offerkit-elements.<hash>.js`, the same bundle under its content hash, is cached for a year.',
    params: z.object({ file: z.string() }),
    replies: {
      200: { description: 'A script or its source map', contentType: ['application/javascript', 'application/json'] },
      304: { description: "The browser's copy is current (If-None-Match)" },
    },
    handler: ({ params, headers }) => {
      const hashed = HASHED.exec(params.file);
      const asset = FILES[hashed ? 'offerkit-elements.js' : params.file];
      const body = asset && read(asset.file);
      if (!asset || !body) throw notFound(`File ${params.file}`);
      // A hashed name names one content: another build's name is not this file.
      if (hashed && variantsOf(body, true).hash !== hashed[1]) throw notFound(`File ${params.file}`);
      return assetReply(body, asset.type, headers, { immutable: Boolean(hashed) });
    },
  }),
];
