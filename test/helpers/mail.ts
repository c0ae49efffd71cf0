// The email the service sent, read from the test run's mail catcher (MailDev's API): invitation links arrive here
// over real SMTP, as they would in an inbox.
import { testEnv } from './servers.js';
import { eventually } from './wait.js';

export interface CaughtMail {
  id: string;
  subject: string;
  text: string;
  html: string;
  to: { address: string }[];
  time: string;
}

/** Every message the catcher holds for an address, oldest first. */
export async function inbox(address: string): Promise<CaughtMail[]> {
  const res = await fetch(`${testEnv().mail.webUrl}/api/email`);
  if (!res.ok) throw new Error(`mail catcher answered ${res.status}`);
  const all = (await res.json()) as CaughtMail[];
  return all.filter((m) => m.to.some((t) => t.address.toLowerCase() === address.toLowerCase()));
}

/** The accept link in a message (`<console>/invite?token=...`), and its secret. */
export function acceptLinkIn(m: CaughtMail): { url: string; token: string } | null {
  const link = /(https?:\/\/\S+\/invite\?token=([\w%-]+))/.exec(m.text);
  return link ? { url: link[1], token: decodeURIComponent(link[2]) } : null;
}

/**
 * The accept link of the newest invitation mailed to an address, once it holds more than `seen` messages (the count
 * before the action that sends it; waits for the message).
 */
export async function invitationLink(address: string, seen = 0): Promise<{ url: string; token: string }> {
  const mail = await eventually(async () => {
    const mine = await inbox(address);
    return mine.length > seen ? mine.at(-1) : undefined;
  }, 10_000);
  const link = acceptLinkIn(mail);
  if (!link) throw new Error(`no accept link in the message to ${address}: ${mail.text}`);
  return link;
}

/** The secret of that link. */
export const invitationToken = async (address: string, seen = 0) => (await invitationLink(address, seen)).token;
