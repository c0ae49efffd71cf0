// Builds the components into one ES module, dist/offerkit-elements.js (Lit and @offerkit/sdk included, the SDK
// from its TypeScript source so the bundle never picks up a stale packages/sdk/dist), and reports its size.
// `npm run build:elements` at the repository root (also run before `npm start`); the browser tests call build().
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import * as esbuild from 'esbuild';

const here = path.dirname(fileURLToPath(import.meta.url));
export const DIST_FILE = path.join(here, 'dist', 'offerkit-elements.js');
/**
 * The MCP Apps (src/mcp/apps.ts serves each as one self-contained page): each has its own entry in mcp-app/ with
 * only the components it shows, built to dist/mcp-app-<name>.js.
 */
export const MCP_APPS = ['usage-meter', 'paywall', 'pricing-table', 'account-balance'] as const;
export const mcpAppFile = (name: (typeof MCP_APPS)[number]) => path.join(here, 'dist', `mcp-app-${name}.js`);
const SDK_SOURCE = path.join(here, '..', 'sdk', 'src', 'index.ts');

/**
 * The bundle's size: minified bytes, gzipped (level 9) and brotli (zlib's default quality, as the service compresses)
 * bytes, and the minified bytes of the SDK and of Lit in it.
 */
export interface BuildSize {
  file: string;
  bytes: number;
  gzip: number;
  brotli: number;
  sdk: number;
  lit: number;
}

/**
 * The components' stylesheets (`css\`...\`` templates) without their indentation: esbuild's minifier leaves template
 * literals as written, and the bundle's size is guarded (README, Size). Runs of white space become one space, none
 * next to braces and semicolons: the same rules, read the same way.
 */
const compactCss: esbuild.Plugin = {
  name: 'compact-css',
  setup(b) {
    b.onLoad({ filter: /[\\/]packages[\\/]elements[\\/]src[\\/].*\.ts$/ }, (args) => ({
      loader: 'ts',
      contents: fs
        .readFileSync(args.path, 'utf8')
        .replace(
          /\bcss`([^`]*)`/g,
          (_, rules: string) => `css\`${rules.replace(/\s+/g, ' ').replace(/ ?([{};]) ?/g, '$1')}\``,
        ),
    }));
  },
};

export async function build(): Promise<BuildSize> {
  const main = await esbuild.build({
    plugins: [compactCss],
    metafile: true,
    entryPoints: [path.join(here, 'src', 'index.ts')],
    outfile: DIST_FILE,
    bundle: true,
    format: 'esm',
    target: 'es2022',
    minify: true,
    // Class names survive minifying: the SDK's errors name themselves after their class (`error.name` is
    // "AuthenticationError", not "Z"), and so do the components in stack traces.
    keepNames: true,
    sourcemap: 'linked',
    legalComments: 'none',
    tsconfig: path.join(here, 'tsconfig.json'),
    alias: { '@offerkit/sdk': SDK_SOURCE },
    logLevel: 'warning',
  });
  // The example page's own script. Its import of the package (../src/index.js) stays an import, of the bundle
  // above, which the page has loaded already: one copy of the components and the SDK on the page.
  await esbuild.build({
    entryPoints: [path.join(here, 'example', 'example.ts')],
    outfile: path.join(here, 'dist', 'example.js'),
    bundle: true,
    format: 'esm',
    target: 'es2022',
    minify: true,
    tsconfig: path.join(here, 'tsconfig.json'),
    plugins: [
      {
        name: 'the-bundle',
        setup(b) {
          b.onResolve({ filter: /^\.\.\/src\/index\.js$/ }, () => ({ path: './offerkit-elements.js', external: true }));
        },
      },
    ],
    logLevel: 'warning',
  });
  // The scripts of the MCP App UI resources (src/mcp/apps.ts inlines each in its page): per app, its components,
  // Lit, the SDK they are built on and the view side of the MCP Apps protocol (mcp-app/bridge.ts), minified. Each
  // page must stay within 150 KB (test/api/mcp-apps.test.ts): one entry per app, never the whole bundle.
  await esbuild.build({
    entryPoints: MCP_APPS.map((name) => ({ in: path.join(here, 'mcp-app', `${name}.ts`), out: `mcp-app-${name}` })),
    outdir: path.join(here, 'dist'),
    bundle: true,
    format: 'esm',
    target: 'es2022',
    minify: true,
    keepNames: true,
    legalComments: 'none',
    tsconfig: path.join(here, 'tsconfig.json'),
    alias: { '@offerkit/sdk': SDK_SOURCE },
    logLevel: 'warning',
  });
  const code = fs.readFileSync(DIST_FILE);
  // Each input's share of the minified output (esbuild's metafile), summed for the SDK's sources and Lit's packages.
  const out = Object.entries(main.metafile.outputs).find(([f]) => f.endsWith('offerkit-elements.js'))![1];
  const share = (test: (input: string) => boolean) =>
    Object.entries(out.inputs)
      .filter(([input]) => test(input))
      .reduce((n, [, v]) => n + v.bytesInOutput, 0);
  return {
    file: DIST_FILE,
    bytes: code.length,
    gzip: zlib.gzipSync(code, { level: 9 }).length,
    brotli: zlib.brotliCompressSync(code).length,
    sdk: share((i) => i.includes('packages/sdk/src/')),
    lit: share((i) => /node_modules\/(lit|lit-html|lit-element|@lit)\//.test(i)),
  };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  // No top-level await: the tests load this module with require(), which cannot load modules that use it.
  // The figures packages/elements/README.md states ("Size"): kB of 1,024 bytes, gzip at level 9.
  const kb = (n: number) => `${(n / 1024).toFixed(1)} kB`;
  void build().then(({ file, bytes, gzip, brotli, sdk, lit }) =>
    console.log(
      `${path.relative(process.cwd(), file)}: ${kb(bytes)}, ${kb(gzip)} gzipped, ${kb(brotli)} brotli (of the ` +
        `minified size: the SDK ${kb(sdk)}, Lit ${kb(lit)})`,
    ),
  );
}
