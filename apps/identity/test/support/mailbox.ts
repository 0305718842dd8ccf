import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";

export interface ReceivedMail {
  to: string[];
  subject: string;
  text: string;
}

/**
 * A real SMTP server on loopback that keeps what it receives: the identity service sends its
 * sign-in mail here over `SMTP_URL`, exactly as it would to a provider.
 */
export async function startMailbox() {
  const mails: ReceivedMail[] = [];
  const waiters: (() => void)[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        mails.push(
          parseMail(
            Buffer.concat(chunks).toString("utf8"),
            session.envelope.rcptTo.map((r) => r.address),
          ),
        );
        for (const wake of waiters.splice(0)) wake();
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.server.address() as AddressInfo;

  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    /** The newest mail to `to` after `since` mails had arrived, waiting up to 5 s for it. */
    async next(to: string, since: number): Promise<ReceivedMail> {
      const deadline = Date.now() + 5000;
      for (;;) {
        const found = mails.slice(since).findLast((mail) => mail.to.includes(to));
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`no mail to ${to}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 100);
        });
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export type Mailbox = Awaited<ReturnType<typeof startMailbox>>;

/** The code and the link's secret of a sign-in mail. */
export function signInSecrets(mail: ReceivedMail): { code: string; link: string } {
  const code = /code: (\d{6})/.exec(mail.subject)?.[1];
  const link = /\/sign-in\/link#([A-Za-z0-9_-]+)/.exec(mail.text)?.[1];
  if (!code || !link) throw new Error(`not a sign-in mail: ${mail.subject}`);
  return { code, link };
}

function parseMail(raw: string, to: string[]): ReceivedMail {
  const split = raw.indexOf("\r\n\r\n");
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, " ");
  const body = raw.slice(split + 4);
  const subject = /^Subject: (.*)$/im.exec(head)?.[1] ?? "";
  const quotedPrintable = /^Content-Transfer-Encoding: quoted-printable/im.test(head);
  const text = quotedPrintable
    ? body
        .replace(/=\r\n/g, "")
        .replace(/=([0-9A-F]{2})/g, (_, hex) => String.fromCharCode(Number.parseInt(hex, 16)))
    : body;
  return { to, subject, text };
}
