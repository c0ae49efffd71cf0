import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';

/** Debian's full Chromium: what a person looks at pages with, and the tests' fallback. */
export const FULL_CHROMIUM = '/usr/bin/chromium';
/**
 * Debian's `chromium-headless-shell`: the same engine (the same version as `chromium`) without the browser's UI
 * layer, the binary Playwright itself prefers for headless runs. Measured on test/browser/console-roles.test.ts,
 * it spends about a sixth less CPU than the full browser in headless mode (decision 0570).
 */
export const HEADLESS_SHELL = '/usr/bin/chromium-headless-shell';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** The browser the tests launch: `CHROMIUM_PATH` when set, else the headless shell when installed, else Chromium. */
function chosen(): string {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  return fs.existsSync(HEADLESS_SHELL) ? HEADLESS_SHELL : FULL_CHROMIUM;
}

/**
 * Debian's Chromium, installed with apt when missing and running as root (as CI does on a fresh
 * machine). Without it the browser tests fail with this message rather than being skipped.
 */
export function ensureChromium(): string {
  const path = chosen();
  if (fs.existsSync(path)) return path;
  if (process.getuid?.() === 0 && path === FULL_CHROMIUM) {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    process.stderr.write(`Chromium is missing at ${path}: installing Debian's chromium package with apt-get\n`);
    spawnSync('apt-get', ['update'], { stdio: 'inherit', env });
    spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], { stdio: 'inherit', env });
  }
  if (!fs.existsSync(path)) {
    throw new Error(
      `The browser tests need Chromium at ${path} and it could not be installed ` +
        `(install Debian's package as root: "apt-get install -y chromium", or set CHROMIUM_PATH).`,
    );
  }
  return path;
}

/**
 * `npm test` on a machine where it runs as root (CI): Debian's `chromium-headless-shell` installed beside the
 * builds when missing (seconds; apt's package lists are read as they are, refreshed only if the package is not in
 * them). Resolves to the browser the suite will use: the shell, or Chromium (`ensureChromium`) when it could not be
 * installed (no root, no apt, no network), so a failed install never fails the run.
 */
export async function ensureTestBrowser(): Promise<string> {
  if (process.env.CHROMIUM_PATH || fs.existsSync(HEADLESS_SHELL) || process.getuid?.() !== 0) return ensureChromium();
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const apt = (args: string[]) =>
    new Promise<boolean>((resolve) => {
      const child = spawn('apt-get', args, { stdio: 'ignore', env });
      child.on('error', () => resolve(false));
      child.on('close', (code) => resolve(code === 0));
    });
  const install = ['install', '-y', '--no-install-recommends', 'chromium-headless-shell'];
  if (!(await apt(install)) && (await apt(['update']))) await apt(install);
  return ensureChromium();
}
