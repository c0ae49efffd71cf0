import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { notFound } from '../http/errors.js';
import { Reply, route, type RouteDef } from '../http/route.js';

// The drop-in components (packages/elements), built by `npm run build:elements` (run before `npm start`).
const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../packages/elements');
const FILES: Record<string, { type: string; file: string }> = {
  'offerkit-elements.js': { type: 'application/javascript', file: 'dist/offerkit-elements.js' },
  'offerkit-elements.js.map': { type: 'application/json', file: 'dist/offerkit-elements.js.map' },
  'example.js': { type: 'application/javascript', file: 'dist/example.js' },
};

function read(file: string): Buffer | null {
  try {
    return fs.readFileSync(path.join(pkg, file));
  } catch {
    return null;
  }
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
    description: '404 until the package is built (`npm run build:elements`, which `npm start` runs first).',
    params: z.object({ file: z.string() }),
    replies: {
      200: { description: 'A script or its source map', contentType: ['application/javascript', 'application/json'] },
    },
    handler: ({ params }) => {
      const asset = FILES[params.file];
      const body = asset && read(asset.file);
      if (!asset || !body) throw notFound(`File ${params.file}`);
      return new Reply(200, body, { 'Cache-Control': 'no-cache' }, asset.type);
    },
  }),
];
