// The project's folder, found from this module's own place: `src/` when the service runs from its sources (tsx, the
// tests' processes of one file), `dist/service/` when it runs from its bundle (`npm start`, scripts/build-service.ts).
// Paths to the project's own files (the console's build, the workflows' sources, the components) start here, so they
// are the same in both.
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

/** The project's version (package.json): the MCP server's and the API reference's. */
export const PACKAGE_VERSION = (
  JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }
).version;
