// `npm run surface`: what the service shows the world, as three fingerprints a refactor must leave unchanged:
// the OpenAPI document, the MCP tool list (as `tools/list` renders it for a full-access token) and the SDK's
// generated files. `--out <dir>` also writes the three documents, so two runs can be compared with `diff`.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildOpenApi } from '../src/http/openapi.js';
import { routes } from '../src/routes.js';
import { toolsOf } from '../src/mcp/tools.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const sdkDir = path.join(root, 'packages/sdk/src/generated');

const openapi = JSON.stringify(buildOpenApi(routes, { serverUrl: 'http://localhost:3000', version: '0' }), null, 2);
const tools = JSON.stringify(
  toolsOf(routes).map((t) => ({
    name: t.name,
    title: t.title,
    description: t.description,
    inputSchema: t.inputSchema,
    outputSchema: t.outputSchema,
    annotations: t.annotations,
  })),
  null,
  2,
);
const sdk = fs
  .readdirSync(sdkDir)
  .sort()
  .map((f) => `// ${f}\n${fs.readFileSync(path.join(sdkDir, f), 'utf8')}`)
  .join('\n');

const hash = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 16);
const outAt = process.argv.indexOf('--out');
if (outAt > 0) {
  const dir = path.resolve(process.argv[outAt + 1] ?? 'surface');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'openapi.json'), openapi);
  fs.writeFileSync(path.join(dir, 'mcp-tools.json'), tools);
  fs.writeFileSync(path.join(dir, 'sdk-generated.ts'), sdk);
}
console.log(`openapi   ${hash(openapi)}  ${openapi.length} chars`);
console.log(`mcp tools ${hash(tools)}  ${tools.length} chars`);
console.log(`sdk       ${hash(sdk)}  ${sdk.length} chars`);
