// The operator console in a real headless Chromium: the front end built once per run (console/dist),
// pages watched for console errors and failed requests, screenshots kept under .test-data/console/.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { CONSOLE_DIST } from '../../src/console-api/console.js';
import { picture } from './browser.js';

export const SCREENSHOT_DIR = path.resolve('.test-data/console');

let built = false;

/** Builds the console unless this run already did, or `npm test` built it after the last change to console/src. */
export function ensureConsoleBuilt(): void {
  if (built) return;
  const index = path.join(CONSOLE_DIST, 'index.html');
  const sources = path.resolve('console/src');
  const newest = Math.max(
    ...fs.readdirSync(sources, { recursive: true }).map((f) => fs.statSync(path.join(sources, String(f))).mtimeMs),
  );
  if (!fs.existsSync(index) || fs.statSync(index).mtimeMs < newest) {
    // The project's own script: the SDK the console calls the API through, then the front end.
    const r = spawnSync('npm', ['run', 'build:console', '--silent'], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error('building the console failed');
  }
  built = true;
}

/** Records what a person would notice: errors in the browser console, requests that failed or got 5xx. */
export function watch(page: Page) {
  const problems: string[] = [];
  page.on('console', (m) => {
    // Chromium logs every 4xx answer as a console error; those are listed below by status and URL instead.
    if (m.type() === 'error' && !/Failed to load resource: the server responded with a status of 4/.test(m.text()))
      problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => {
    // A read the browser dropped because the test moved on (the next page's navigation cancels the last page's
    // loads) is not a page problem; a write cancelled, or a read that failed any other way, is.
    if (r.method() === 'GET' && r.failure()?.errorText === 'net::ERR_ABORTED') return;
    problems.push(`request failed: ${r.method()} ${r.url()} ${r.failure()?.errorText}`);
  });
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`${r.status()} from ${r.request().method()} ${r.url()}`);
  });
  return problems;
}

/**
 * Marks problems a test causes on purpose (an API error it wants to see shown): they must have happened,
 * and matching ones are ignored for the rest of the test.
 */
export async function expected(page: Page, problems: string[], allowed: RegExp[], pattern: RegExp): Promise<void> {
  await page.waitForTimeout(200);
  if (!problems.some((p) => pattern.test(p)))
    throw new Error(`expected a problem matching ${pattern}; seen: ${problems.join(' | ')}`);
  allowed.push(pattern);
}

/**
 * A full-page screenshot, at the page's width and at 390 px (a phone), for a person to look at. On a page already
 * 390 px wide (a test driving the phone layout), one picture: `<name>-390.png` (the window alone while a dialog is
 * open).
 */
export async function shoot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const size = page.viewportSize()!;
  // From the top: scrolled, the fixed header and navbar land in the middle of a full-page picture.
  await page.evaluate('window.scrollTo(0, 0)');
  if (size.width <= 390) {
    await page.waitForTimeout(300); // an accordion or a dialog done opening
    // A dialog covers the window, not the page: the window alone then.
    const fullPage = (await page.getByRole('dialog').count()) === 0;
    await picture(page, { path: path.join(SCREENSHOT_DIR, `${name}-390.png`), fullPage });
    const wider: number = await page.evaluate('document.documentElement.scrollWidth - window.innerWidth');
    if (wider > 1) throw new Error(`${name}: the page is ${wider}px wider than a ${size.width}px screen`);
    return;
  }
  await picture(page, { path: path.join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(150);
  await picture(page, { path: path.join(SCREENSHOT_DIR, `${name}-390.png`), fullPage: true });
  // Nothing sticks out sideways on a phone.
  const overflow: number = await page.evaluate('document.documentElement.scrollWidth - window.innerWidth');
  await page.setViewportSize(size);
  if (overflow > 1) throw new Error(`${name}: the page is ${overflow}px wider than a 390px screen`);
}

/**
 * A request from outside any browser, with exactly the headers given (a cookie, a forged Origin): Playwright's and
 * fetch's clients set or drop some headers themselves, so CSRF checks are tested with plain node:http.
 */
export function rawRequest(
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; body: string }> {
  const u = new URL(url);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method,
        headers: { ...headers, ...(payload ? { 'content-type': 'application/json' } : {}) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, body: text }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * Opens a select (Mantine's combobox) and picks an option. A re-render right after a save (the page reloads
 * what it saved and mounts the editor again) can close a list that has just opened, so it opens it again.
 */
export async function choose(
  page: Page,
  combobox: Locator,
  option: { name: string | RegExp; exact?: boolean },
): Promise<void> {
  const item = page.getByRole('option', option);
  for (let attempt = 1; ; attempt++) {
    await combobox.click();
    try {
      await item.waitFor({ timeout: 5_000 });
      break;
    } catch (e) {
      if (attempt === 3) throw e;
    }
  }
  await item.click();
}

/**
 * Checks that a person could tap the control on the screen as it is, then taps it: scrolled to the middle of the
 * window, it lies within the window's width (not cut off, not inside something scrolled sideways), its own text is
 * not clipped (a squeezed button), nothing covers its centre (a header, a neighbour, an overlay), and it is at least
 * 20 px in both directions unless it is a link in a sentence.
 */
export async function tap(control: Locator): Promise<void> {
  await reachable(control);
  await control.click();
}

/** The checks of `tap` alone (before typing into an input, say). */
export async function reachable(control: Locator): Promise<void> {
  await control.waitFor();
  // Given a moment to settle, as a person would: a menu sliding in, a dialog fading out.
  const until = Date.now() + 2_000;
  for (;;) {
    const problem = await control.evaluate(REACHABLE);
    if (!problem) return;
    if (Date.now() > until) throw new Error(`${control.toString()}: ${problem}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

// Run in the page as written (from a string: the test runner's transpiler would add helpers the page lacks).
const REACHABLE = new Function(
  'el',
  `
  el.scrollIntoView({ block: 'center', inline: 'nearest' });
  const r = el.getBoundingClientRect();
  const width = window.innerWidth;
  const name = (e) =>
    e
      ? '<' + e.tagName.toLowerCase() + ' class="' + (e.getAttribute('class') ?? '') + '"> ' +
        (e.textContent ?? '').slice(0, 40)
      : 'nothing';
  if (r.left < -0.5 || r.right > width + 0.5)
    return 'cut off: it spans ' + Math.round(r.left) + '..' + Math.round(r.right) + ' px of a ' + width + ' px window';
  for (let p = el.parentElement; p; p = p.parentElement)
    if (p.scrollLeft > 0) return 'only reachable by scrolling ' + name(p) + ' sideways';
  // Text clipped inside it (a button squeezed by its neighbours); an input's own value may scroll.
  for (const e of [el, ...el.querySelectorAll('*')]) {
    const clips = ['hidden', 'clip'].includes(getComputedStyle(e).overflowX);
    const text = [...e.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim());
    if (clips && text && !['INPUT', 'TEXTAREA'].includes(e.tagName) && e.scrollWidth > e.clientWidth + 1)
      return 'its text is cut off: ' + name(e);
  }
  // A link in a sentence may be as small as the text (WCAG 2.5.8's inline exception).
  if ((r.width < 20 || r.height < 20) && getComputedStyle(el).display !== 'inline')
    return 'too small to tap: ' + Math.round(r.width) + ' x ' + Math.round(r.height) + ' px';
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  if (!hit || !(hit === el || el.contains(hit))) return 'covered by ' + name(hit);
  return null;
`,
) as (el: Element) => string | null;
