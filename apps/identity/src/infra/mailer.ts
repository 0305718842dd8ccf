import { createRequire } from "node:module";
import type nodemailer from "nodemailer";
import type { Logger } from "pino";

interface Mail {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(mail: Mail): Promise<void>;
  /** True when mail is written to the service log instead of sent (development). */
  readonly logsInstead: boolean;
}

/**
 * Sends mail through `smtpUrl` (nodemailer). Without one the mail, sign-in code and link included,
 * is written to the service log instead, so that a developer can read it there: the configuration
 * (`loadConfig`) requires SMTP_URL everywhere but in development on loopback, where PUBLIC_URL is
 * unset or plain http on a loopback host, so no log of a service that others reach holds one.
 */
export function createMailer(smtpUrl: string | undefined, from: string, logger: Logger): Mailer {
  if (!smtpUrl) {
    return {
      logsInstead: true,
      async send(mail) {
        logger.info(
          { to: mail.to, subject: mail.subject, text: mail.text },
          "mail (no SMTP_URL: logged, not sent)",
        );
      },
    };
  }
  // Loaded only when mail is to be sent: without SMTP_URL the process never holds its code.
  const mailer = createRequire(import.meta.url)("nodemailer") as typeof nodemailer;
  const transport = mailer.createTransport(smtpUrl);
  return {
    logsInstead: false,
    async send(mail) {
      try {
        await transport.sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text });
      } catch (error) {
        // The mail's text holds a sign-in code: only the failure is logged.
        logger.warn({ err: error }, "could not send mail");
        throw error;
      }
    },
  };
}
