// Where the console lives, kept apart from its server code so the OAuth routes can link to it cheaply.
import type { Config } from '../config.js';

export const CONSOLE_PATH = '/console';

/**
 * The dashboard URL of the spec ({dashboard_url}): APP_URL when set, else the console this service serves on
 * its public origin. The consent page is `<dashboard>/oauth/consent`.
 */
export function dashboardUrl(config: Pick<Config, 'APP_URL'>, origin: string): string {
  return (config.APP_URL ?? `${origin}${CONSOLE_PATH}`).replace(/\/+$/, '');
}

/** The demo workspace's built-in webhook receiver (its handler is development code: src/dev/demo-receiver.ts). */
export const DEMO_RECEIVER_PATH = `${CONSOLE_PATH}/api/demo-receiver`;
