// The published package as a user gets it: `npm pack` (which builds it), installed offline into an empty project,
// imported by plain Node and type-checked by tsc, then used against the real test API. A missing file, export,
// declaration or build step fails here even when the in-repo tests pass.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { seededApp } from '../helpers/factories.js';
import { readmeModule, readmePrelude } from '../helpers/readme.js';
import { testEnv } from '../helpers/servers.js';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const sdkDir = path.join(root, 'packages/sdk');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

const smokeScript = `
import { LimitReachedError, PublishableClient, SecretClient, signWebhook, verifyWebhook } from '@offerkit/sdk';
const { BASE, APP, KEY, PUB } = process.env;
const secret = new SecretClient({ secretKey: KEY, appId: APP, baseUrl: BASE });
const pub = new PublishableClient({ publishableKey: PUB, appId: APP, baseUrl: BASE });
const out = {};
out.account = (await secret.accounts.create({ id: 'smoke', plan: 'free' })).id;
out.first = (await pub.usage.add('smoke', 'seats')).count;
try {
  await pub.usage.add('smoke', 'seats');
} catch (e) {
  out.limit = { isLimit: e instanceof LimitReachedError, status: e.status, error: e.body.error };
}
const secretKey = 'whsec_' + Buffer.from('smoke-test-secret-24-byt').toString('base64');
const body = JSON.stringify({ id: 'evt_smoke', type: 'account.deleted', data: {} });
out.verified = (await verifyWebhook(body, await signWebhook(body, secretKey, { id: 'evt_smoke' }), secretKey)).id;
out.publishableHasAccounts = 'accounts' in pub;
console.log(JSON.stringify(out));
`;

const typedScript = `
import { PublishableClient, SecretClient, type LimitReachedBody, type WebhookEvent } from '@offerkit/sdk';
export async function typed(secret: SecretClient, pub: PublishableClient, event: WebhookEvent) {
  const count: number = (await pub.usage.add('a', 'b')).count;
  // @ts-expect-error the publishable key cannot manage accounts
  pub.accounts.create({ id: 'x' });
  // @ts-expect-error a body field of the wrong type
  await secret.accounts.create({ id: 1 });
  const offer: LimitReachedBody['offer'] = null;
  if (event.type === 'checkout.completed') return event.data.account.id;
  for await (const account of secret.accounts.list()) return account.id;
  return [count, offer];
}
`;

describe('SDK: the packed tarball installed into an empty project', function () {
  this.timeout(240_000);
  let dir: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'offerkit-sdk-smoke-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it(
    'packs (building it), installs offline with no dependencies, imports, type-checks (README examples too) ' +
      'and calls the API',
    async () => {
      // Packed from a copy of the package's sources: `npm pack` builds, which empties dist first, and the suite's
      // other half (scripts/test.ts) may be starting a service that imports the workspace's dist at that moment.
      const source = path.join(dir, 'sdk');
      fs.cpSync(sdkDir, source, { recursive: true, filter: (f) => !/[\\/](dist|node_modules)$/.test(f) });
      const packed = await run(npm, ['pack', '--json', '--pack-destination', dir], {
        cwd: source,
        env: { ...process.env, PATH: `${path.join(root, 'node_modules/.bin')}${path.delimiter}${process.env.PATH}` },
      });
      const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
      const files = info.files.map((f) => f.path);
      expect(files).to.include.members(['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts']);
      expect(
        files.filter((f) => f.startsWith('src/')),
        'sources stay out of the tarball',
      ).to.deep.equal([]);

      const project = path.join(dir, 'project');
      fs.mkdirSync(project);
      fs.writeFileSync(
        path.join(project, 'package.json'),
        JSON.stringify({ name: 'smoke', private: true, type: 'module' }),
      );
      await run(
        npm,
        ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', path.join(dir, info.filename)],
        { cwd: project },
      );
      const installed = path.join(project, 'node_modules/@offerkit/sdk');
      const manifest = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8'));
      expect(manifest.dependencies ?? {}, 'no runtime dependencies').to.deep.equal({});
      expect(fs.readdirSync(path.join(project, 'node_modules')), 'nothing else installed').to.deep.equal([
        '.package-lock.json',
        '@offerkit',
      ]);

      // Types: the declarations resolve and type the calls (tsc from this repository, strict, NodeNext), and the
      // examples of the package's README and of the main README's SDK section compile against them.
      fs.writeFileSync(path.join(project, 'typed.ts'), typedScript);
      fs.writeFileSync(
        path.join(project, 'readme-sdk.ts'),
        readmeModule(path.join(root, 'packages/sdk/README.md'), readmePrelude),
      );
      fs.writeFileSync(path.join(project, 'readme-main.ts'), readmeModule(path.join(root, 'README.md'), readmePrelude));
      fs.writeFileSync(
        path.join(project, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            exactOptionalPropertyTypes: true,
            noEmit: true,
            module: 'nodenext',
            moduleResolution: 'nodenext',
            target: 'es2022',
            lib: ['es2022', 'dom'],
            types: [],
          },
          files: ['typed.ts', 'readme-sdk.ts', 'readme-main.ts'],
        }),
      );
      const tsc = path.join(root, 'node_modules/typescript/bin/tsc');
      const checked = await run(process.execPath, [tsc, '-p', project]).catch((e: { stdout: string }) => e);
      expect(checked.stdout, 'tsc output').to.equal('');

      // Runtime: plain Node imports it and talks to the real API.
      const { app } = await seededApp();
      fs.writeFileSync(path.join(project, 'smoke.mjs'), smokeScript);
      const { stdout } = await run(process.execPath, ['smoke.mjs'], {
        cwd: project,
        env: { ...process.env, BASE: testEnv().baseUrl, APP: app.id, KEY: app.api_key, PUB: app.public_key },
      });
      expect(JSON.parse(stdout)).to.deep.equal({
        account: 'smoke',
        first: 1,
        limit: { isLimit: true, status: 402, error: 'limit_reached' },
        verified: 'evt_smoke',
        publishableHasAccounts: false,
      });
    },
  );
});
