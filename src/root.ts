// The project's folder, found from this module's own place: `src/` when the service runs from its sources (tsx, the
// tests' processes of one file), `dist/service/` when it runs from its bundle (`npm start`, scripts/build-service.ts).
// Paths to the project's own files (the console's build, the workflows' sources, the components) start here, so they
// are the same in both.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(): string {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json in any folder above ${import.meta.url}`);
  }
}

/** The folder of the project's package.json. */
export const PROJECT_ROOT = findRoot();

/**
 * A sha256 of the project's files named (paths from its folder, in the order given): each name, then its content
 * (nothing for a missing file). What a build is made of, so that the same key means the same build.
 */
export function hashOfFiles(files: readonly string[]): string {
  const hash = createHash('sha256');
  for (const f of files) {
    const full = path.join(PROJECT_ROOT, f);
    hash.update(`${f}\0`);
    hash.update(fs.existsSync(full) ? fs.readFileSync(full) : '');
  }
  return hash.digest('hex');
}

/** The project's version (package.json): the MCP server's and the API reference's. */
export const PACKAGE_VERSION = (
  JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }
).version;
