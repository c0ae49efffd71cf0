// The operator console's front end (console/dist, built by `npm run build:console`), served by the API under
// /console, with the SPA's index.html for paths that are not files. Everything the console does on the server is a
// route of the one table (src/console-api/console.routes.ts, and every `/apps/:appId` route under /console/api).
import fs from 'node:fs';
import path from 'node:path';
import type Koa from 'koa';
import { decodeComponent } from '../http/validate.js';
import { CONSOLE_PATH } from './urls.js';
import { PROJECT_ROOT } from '../root.js';

export { CONSOLE_PATH };
export const CONSOLE_DIST = path.join(PROJECT_ROOT, 'console', 'dist');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
};

function fail(ctx: Koa.Context, status: number, error: string) {
  ctx.status = status;
  ctx.body = { error };
}

/**
 * The console's files, for GET and HEAD under /console that no route answered (the router runs first; the
 * console's JSON lives under /console/api, which never falls back to a page). Not a guard: it serves public files.
 */
export function consoleFiles(): Koa.Middleware {
  return async (ctx, next) => {
    const inside = ctx.path === CONSOLE_PATH || ctx.path.startsWith(`${CONSOLE_PATH}/`);
    if (!inside || ctx.path.startsWith(`${CONSOLE_PATH}/api/`) || ctx.path === `${CONSOLE_PATH}/api`) return next();
    // Pages and files, not the API: no route documents them.
    ctx.state.outsideApi = true;
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return fail(ctx, 405, 'Method not allowed');
    serveStatic(ctx);
  };
}

function serveStatic(ctx: Koa.Context) {
  const rel = (decodeComponent(ctx.path.slice(CONSOLE_PATH.length)) ?? '').replace(/^\/+/, '');
  const file = path.resolve(CONSOLE_DIST, rel);
  const inside = file.startsWith(CONSOLE_DIST + path.sep);
  if (inside && fs.existsSync(file) && fs.statSync(file).isFile()) {
    ctx.type = TYPES[path.extname(file)] ?? 'application/octet-stream';
    // Built assets carry a content hash in their names.
    ctx.set('Cache-Control', rel.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
    ctx.body = fs.createReadStream(file);
    return;
  }
  if (rel.startsWith('assets/')) return fail(ctx, 404, 'Not found');
  const index = path.join(CONSOLE_DIST, 'index.html');
  if (!fs.existsSync(index)) {
    ctx.status = 503;
    ctx.type = 'text/plain';
    ctx.body = 'The console is not built. Run `npm run build:console` (npm start does it for you).';
    return;
  }
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-cache');
  ctx.body = fs.createReadStream(index);
}
