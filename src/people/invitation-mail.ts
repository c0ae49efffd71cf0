// The invitation email: the accept link goes to the invited address and nowhere else in production. Outside
// production it is also written to the service's log, for a developer without a mail catcher at hand.
import type { Deps } from '../deps.js';
import { escapeHtml, sendMail, type SendResult } from './mail.js';

export interface InvitationMail {
  to: string;
  workspace: string;
  role: string;
  inviter: string;
  url: string;
  expiresAt: string;
}

/** Sends the accept link to the invited address; what happened, in words for the person who invited. */
export async function sendInvitation(deps: Deps, m: InvitationMail): Promise<{ sent: boolean; message: string }> {
  const until = new Date(m.expiresAt).toUTCString();
  const result: SendResult = await sendMail(deps, {
    to: m.to,
    subject: `${m.inviter} invited you to ${m.workspace} on offerkit`,
    text:
      `${m.inviter} invited you to the workspace ${m.workspace} as ${m.role}.\n\n` +
      `Open this link to join (it works until ${until}, for ${m.to} only):\n\n${m.url}\n\n` +
      'If you did not expect this, ignore this email: nothing happens unless the link is opened.\n',
    html:
      `<p>${escapeHtml(m.inviter)} invited you to the workspace <strong>${escapeHtml(m.workspace)}</strong> as ` +
      `${escapeHtml(m.role)}.</p><p><a href="${escapeHtml(m.url)}">Join ${escapeHtml(m.workspace)}</a></p>` +
      `<p>The link works until ${escapeHtml(until)}, for ${escapeHtml(m.to)} only. If you did not expect this, ignore ` +
      'this email: nothing happens unless the link is opened.</p>',
  });
  if (deps.config.NODE_ENV !== 'production')
    deps.logger.info(
      { to: m.to, workspace: m.workspace, url: m.url, sent: result.sent },
      'invitation link (written to the log outside production only)',
    );
  return result.sent
    ? { sent: true, message: `The invitation was sent to ${m.to}.` }
    : {
        sent: false,
        message:
          `No email was sent to ${m.to}: ${result.reason}. The invitation is pending: send it again once mail ` +
          'works, or an operator with the admin key prints its link (docs/security.md, "Invitations").',
      };
}
