// The local mail catcher of development (MailDev, in this process): `npm start` sends the service's email here while
// SMTP_URL is unset, so an invitation link arrives by email as in production, readable at its web view. Loaded only
// outside production (src/runtime.ts), and MailDev is a development dependency.
import type { Logger } from '../logger.js';

export interface MailCatcher {
  /** Where the service sends (`smtp://127.0.0.1:<port>`). */
  smtpUrl: string;
  /** The web view listing the messages, and its JSON API under `/api/email`. */
  webUrl: string;
  stop(): Promise<void>;
}

/**
 * Starts MailDev on loopback, on the given ports (0: any free one), keeping the newest 500 messages as files in
 * `directory` (a restart shows them again).
 * MailDev prints one line of its own when its web view listens; it goes to the service's log at debug level instead,
 * so a JSON log stays one object per line.
 */
export async function startMailCatcher(opts: {
  smtpPort: number;
  webPort: number;
  directory: string;
  logger: Logger;
}): Promise<MailCatcher> {
  try {
    return await start(opts);
  } catch (err) {
    // Another program (or a second `npm start`) holds a port: any free ones then, printed in the banner.
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    opts.logger.warn({ err: (err as Error).message }, 'mail catcher: ports taken, using free ones');
    return start({ ...opts, smtpPort: 0, webPort: 0 });
  }
}

async function start(opts: { smtpPort: number; webPort: number; directory: string; logger: Logger }) {
  const { MailDev } = await import('maildev');
  const maildev = new MailDev({
    smtp: opts.smtpPort,
    web: opts.webPort,
    ip: '127.0.0.1',
    webIp: '127.0.0.1',
    silent: true,
    maxEmails: 500,
    mailDirectory: opts.directory,
  });
  const info = console.info;
  console.info = (...args: unknown[]) => opts.logger.debug({ component: 'maildev' }, args.map(String).join(' '));
  let servers: Awaited<ReturnType<typeof maildev.start>>;
  try {
    servers = await maildev.start();
  } catch (err) {
    await maildev.stop().catch(() => undefined);
    throw err;
  } finally {
    console.info = info;
  }
  return {
    smtpUrl: `smtp://127.0.0.1:${servers.smtp.getPort()}`,
    webUrl: `http://127.0.0.1:${servers.api?.getPort() ?? opts.webPort}`,
    stop: () => maildev.stop(),
  };
}
