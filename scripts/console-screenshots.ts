// Takes the README's console screenshots (docs/console/*.png) from a real run: start the service (`npm start`), then
//   SETUP_URL='<the owner setup link it printed>' npx tsx scripts/console-screenshots.ts
// It sets up the owner through the console's own form, opens the demo app's pages at 1280 px and saves them.
// Against a service whose owner exists already: OWNER_EMAIL and OWNER_PASSWORD sign in instead.
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { CHROMIUM_ARGS, ensureChromium } from '../test/helpers/chromium.js';

const setupUrl = process.env.SETUP_URL;
const email = process.env.OWNER_EMAIL ?? 'owner@example.com';
const password = process.env.OWNER_PASSWORD ?? 'a long screenshot password';
const origin = new URL(setupUrl ?? process.env.CONSOLE_URL ?? 'http://127.0.0.1:3000/console/').origin;
const out = path.resolve('docs/console');

async function shot(page: Page, name: string, ready: () => Promise<unknown>) {
  await ready();
  await page.waitForLoadState('networkidle');
  await page.waitForTimeout(800); // charts animate in
  await page.evaluate('window.scrollTo(0, 0)');
  await page.screenshot({ path: path.join(out, `${name}.png`) });
  console.log(`docs/console/${name}.png`);
}

const browser = await chromium.launch({ executablePath: ensureChromium(), args: CHROMIUM_ARGS });
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  if (setupUrl) {
    await page.goto(setupUrl);
    await page.getByLabel('Your name').fill('Olivia Owner');
    await page.getByLabel(/^Email/).fill(email);
    await page.getByLabel(/^Password/).fill(password);
    await page.getByLabel('Workspace name').fill('Acme');
    await page.getByRole('button', { name: 'Create the owner' }).click();
    await page.getByRole('heading', { name: /^Welcome/ }).waitFor();
  } else {
    await page.goto(`${origin}/console/`);
    await page.getByLabel(/^Email/).fill(email);
    await page.getByLabel(/^Password/).fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }
  const me = (await page.evaluate(() => fetch('/console/api/me').then((r) => r.json()))) as {
    workspaces: { demo: boolean; apps: { id: string }[] }[];
  };
  const demo = me.workspaces.find((w) => w.demo)?.apps[0]?.id;
  if (!demo) throw new Error('No demo app: start the service with the demo workspace on (the default in development)');
  const at = (p: string) => page.goto(`${origin}/console/apps/${demo}${p}`);
  fs.mkdirSync(out, { recursive: true });

  await at('');
  await shot(page, 'getting-started', () => page.getByText(/of 5 done|All done/).waitFor());
  await at('/analytics');
  await shot(page, 'analytics', () => page.getByRole('heading', { name: 'Analytics' }).waitFor());
  await at('/catalog');
  await shot(page, 'catalog', () => page.getByRole('heading', { name: 'Catalog' }).waitFor());
  // A subscribed account (from the subscriptions list): its subscription, usage and billing timeline.
  await at('/billing');
  await page.getByRole('table', { name: 'Subscriptions' }).getByRole('link').first().click();
  await shot(page, 'account', () => page.getByRole('list', { name: 'Billing timeline' }).waitFor());
  await at('/webhooks');
  await shot(page, 'webhooks', () => page.getByRole('heading', { name: 'Webhooks' }).waitFor());
  await at('/offers');
  await page.getByRole('table').getByRole('link').first().click();
  await shot(page, 'offers', () => page.getByLabel('Live preview').waitFor());
  await at('/cancel-flows');
  await shot(page, 'cancel-flows', () => page.getByLabel('Steps').waitFor());
} finally {
  await browser.close();
}
