import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { z } from 'zod';
import { notFound } from '../errors.js';
import { htmlCsp } from '../http/headers.js';
import { buildOpenApi } from '../http/openapi.js';
import { Reply, route, type RouteDef } from '../http/route.js';
import { PACKAGE_VERSION } from '../root.js';

const require = createRequire(import.meta.url);
const version = PACKAGE_VERSION;
const swaggerDir = path.dirname(require.resolve('swagger-ui-dist/package.json'));

/** Swagger UI's files, read once; served from this service so the reference works offline. */
const ASSETS: Record<string, { type: string; file: string }> = {
  'swagger-ui.css': { type: 'text/css', file: 'swagger-ui.css' },
  'swagger-ui-bundle.js': { type: 'application/javascript', file: 'swagger-ui-bundle.js' },
  'swagger-ui-standalone-preset.js': { type: 'application/javascript', file: 'swagger-ui-standalone-preset.js' },
  'favicon-32x32.png': { type: 'image/png', file: 'favicon-32x32.png' },
};
const assetCache = new Map<string, Buffer>();

/**
 * The page's one inline script, allowed by its hash in the page's Content-Security-Policy (no other inline script
 * runs). No validator badge: it would send the document's URL to validator.swagger.io.
 */
const INIT = `
    window.onload = function () {
      window.ui = SwaggerUIBundle({
        url: '/openapi.json',
        dom_id: '#reference',
        deepLinking: true,
        persistAuthorization: true,
        validatorUrl: null,
        presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
        layout: 'StandaloneLayout',
      });
    };
  `;

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>offerkit API reference</title>
  <link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="reference"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/swagger-ui-standalone-preset.js"></script>
  <script>${INIT}</script>
</body>
</html>
`;

/** The document of each route table served (one per process, plus tests' own tables). */
const documents = new WeakMap<readonly RouteDef[], ReturnType<typeof buildOpenApi>>();

/** /openapi.json (of the route table the request is served from) and /docs. */
export const docsRoutes: RouteDef[] = [
  route({
    method: 'GET',
    path: '/openapi.json',
    sdk: 'service.openapi',
    auth: ['N'],
    tags: ['Service'],
    summary: 'This OpenAPI 3.1 document',
    description: 'Generated from the route table and the zod schemas the service validates with.',
    response: z.looseObject({ openapi: z.string(), info: z.looseObject({}), paths: z.record(z.string(), z.unknown()) }),
    handler: ({ origin, routes }) => {
      let doc = documents.get(routes);
      if (!doc) documents.set(routes, (doc = buildOpenApi(routes, { version })));
      return { ...doc, servers: [{ url: origin }] };
    },
  }),
  route({
    method: 'GET',
    path: '/docs',
    sdk: 'service.docs',
    auth: ['N'],
    tags: ['Service'],
    summary: 'Interactive API reference',
    replies: { 200: { description: 'The Swagger UI page', contentType: 'text/html' } },
    // "Try it out" sends requests to the document's server, PUBLIC_API_URL when set (perhaps not this origin).
    handler: ({ origin }) =>
      new Reply(
        200,
        PAGE,
        { 'Content-Security-Policy': htmlCsp({ inlineScripts: [INIT], connectTo: [origin] }) },
        'text/html; charset=utf-8',
      ),
  }),
  route({
    method: 'GET',
    path: '/docs/assets/:file',
    sdk: 'service.docsAsset',
    auth: ['N'],
    tags: ['Service'],
    summary: 'Files of the API reference page',
    params: z.object({ file: z.string() }),
    replies: {
      200: {
        description: 'A style sheet, script or icon',
        contentType: ['text/css', 'application/javascript', 'image/png'],
      },
    },
    handler: ({ params }) => {
      const asset = ASSETS[params.file];
      if (!asset) throw notFound(`File ${params.file}`);
      let body = assetCache.get(params.file);
      if (!body) {
        body = fs.readFileSync(path.join(swaggerDir, asset.file));
        assetCache.set(params.file, body);
      }
      return new Reply(200, body, { 'Cache-Control': 'public, max-age=86400' }, asset.type);
    },
  }),
];
