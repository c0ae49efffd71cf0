// One headless Chromium per mocha process, shared by the browser files: launching it and starting its helper
// processes (GPU, network, storage) cost each file a couple of CPU-seconds, and a half of `npm test` runs a dozen
// such files one after another. Isolation stays what it was: each file gets its own BrowserContexts (cookies, storage,
// cache, service workers are per context), and the contexts a file opened are closed when it closes its handle.
import type { Browser, BrowserContext, BrowserContextOptions, Locator, Page } from 'playwright-core';
import { CHROMIUM_ARGS, ensureChromium } from './chromium.js';

let shared: Promise<Browser> | undefined;

/** The process's Chromium, launched on first use (and again if it died: a crash ends one file, not the rest). */
function sharedChromium(): Promise<Browser> {
  if (!shared) {
    const launching = (async () => {
      // Imported here so processes without a browser file (and the root hooks) do not load Playwright.
      const { chromium } = await import('playwright-core');
      const browser = await chromium.launch({ executablePath: ensureChromium(), args: CHROMIUM_ARGS });
      browser.on('disconnected', () => {
        if (shared === launching) shared = undefined;
      });
      return browser;
    })();
    shared = launching;
    launching.catch(() => {
      if (shared === launching) shared = undefined;
    });
  }
  return shared;
}

/**
 * A browser file's handle on the shared Chromium: what the files used of playwright's `Browser` (contexts and pages,
 * then `close`), each new context owned by the file. `close` closes those contexts, not the browser.
 */
export interface FileBrowser {
  newContext(options?: BrowserContextOptions): Promise<BrowserContext>;
  /** A page in a context of its own, closed with the page (as `Browser.newPage`). */
  newPage(options?: BrowserContextOptions): Promise<Page>;
  close(): Promise<void>;
}

/** Opens a handle for one file (in its `before`); close it in its `after`. */
export async function openBrowser(): Promise<FileBrowser> {
  const browser = await sharedChromium();
  const contexts = new Set<BrowserContext>();
  const newContext = async (options?: BrowserContextOptions) => {
    // Reduced motion, as a person who asks their system for it: the console (Mantine's `respectReducedMotion`) then
    // opens dialogs, menus and accordions without their transitions, so the renderer draws no animation frames
    // (decision 0570). A file that wants the motion passes `reducedMotion: 'no-preference'`.
    const context = await browser.newContext({ reducedMotion: 'reduce', ...options });
    contexts.add(context);
    context.on('close', () => contexts.delete(context));
    return context;
  };
  return {
    newContext,
    async newPage(options) {
      const context = await newContext(options);
      const page = await context.newPage();
      page.on('close', () => void context.close().catch(() => {}));
      return page;
    },
    async close() {
      await Promise.all([...contexts].map((c) => c.close().catch(() => {})));
    },
  };
}

/** Closes the process's Chromium if a file launched it (the root `afterAll`, test/helpers/hooks.ts). */
export async function closeSharedChromium(): Promise<void> {
  const launching = shared;
  shared = undefined;
  if (!launching) return;
  const browser = await launching.catch(() => undefined);
  await browser?.close();
}

/**
 * Whether the browser tests write their screenshots (for a person to look at: `.test-data/console/`,
 * `.test-data/screenshots/`). `TEST_SCREENSHOTS=0` turns them off: `npm test` does by default, since nobody reads
 * CI's and encoding full-page PNGs is a good part of Chromium's CPU there. Pictures of failures are always taken.
 */
export const SCREENSHOTS = process.env.TEST_SCREENSHOTS !== '0';

/**
 * A screenshot of the page or of one element, unless screenshots are off. Off, it still waits for what taking it
 * waited for (the element visible, a frame painted), so the checks after it see the same page either way.
 */
export async function picture(target: Page | Locator, options: { path: string; fullPage?: boolean }): Promise<void> {
  if (SCREENSHOTS) {
    await target.screenshot(options);
    return;
  }
  const page = 'mainFrame' in target ? target : target.page();
  if (!('mainFrame' in target)) await target.waitFor({ state: 'visible' });
  // Two animation frames: the next one painted after every layout change so far.
  await page.evaluate('new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))');
}
