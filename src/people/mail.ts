// The service's email: one SMTP transport (nodemailer) per process, from SMTP_URL. Invitation links go this way only,
// so that whoever accepts one has shown they read the invited address's mail (docs/security.md, "Invitations").
import type { Transporter } from 'nodemailer';
import type { Deps } from '../deps.js';

export interface Mail {
  to: string;
  subject: string;
  text: string;
  html: string;
}

/** Why a message was not sent, in words for the person who asked; null when it was sent. */
export type SendResult = { sent: true } | { sent: false; reason: string };

const transports = new WeakMap<Deps, { url: string; transport: Transporter }>();

/**
 * The SMTP transport of SMTP_URL, or null when none is set. Each wait is bounded (connecting, the server's greeting,
 * an idle socket), so a mail server that does not answer costs an invitation seconds, not a hung request.
 */
async function transportOf(deps: Deps): Promise<Transporter | null> {
  const url = deps.config.SMTP_URL;
  if (!url) return null;
  const known = transports.get(deps);
  if (known?.url === url) return known.transport;
  // Loaded on the first mail (a process that sends none never loads it).
  const { default: nodemailer } = await import('nodemailer');
  const transport = nodemailer.createTransport({
    url,
    connectionTimeout: 5_000,
    greetingTimeout: 5_000,
    socketTimeout: 10_000,
  });
  transports.set(deps, { url, transport });
  return transport;
}

/** Sends one message through SMTP_URL. Never throws: a refusal or an unreachable server is the reason returned. */
export async function sendMail(deps: Deps, mail: Mail): Promise<SendResult> {
  const transport = await transportOf(deps);
  if (!transport) return { sent: false, reason: 'this service has no SMTP settings (SMTP_URL)' };
  try {
    await transport.sendMail({ from: deps.config.MAIL_FROM, ...mail });
    return { sent: true };
  } catch (err) {
    deps.logger.warn({ err, to: mail.to }, 'mail: could not send');
    return { sent: false, reason: `the mail server refused or did not answer (${(err as Error).message})` };
  }
}

/** Closes the pooled connections of this process's transport (shutdown). */
export function closeMail(deps: Deps): void {
  transports.get(deps)?.transport.close();
  transports.delete(deps);
}

/** Text that goes into a message's HTML part. */
export const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
