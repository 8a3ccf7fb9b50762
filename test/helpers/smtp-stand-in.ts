import { simpleParser } from 'mailparser';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** A mail as the stand-in received it, parsed. */
export interface ReceivedMail {
  subject: string;
  /** The To header as written ("ann@example.com, bob@example.com"). */
  to: string;
  /** The addresses the SMTP envelope named (RCPT TO). */
  recipients: string[];
  from: string;
  text: string;
}

export interface SmtpStandIn {
  /** Its SMTP port on 127.0.0.1. */
  port: number;
  /** `GET` lists the mails received, oldest first, as JSON; `DELETE` forgets them. */
  mailsUrl: string;
  mails: ReceivedMail[];
  close(): Promise<void>;
}

/**
 * A real SMTP server (smtp-server) on 127.0.0.1, for tests in other processes than the one it lives in: plain SMTP
 * (STARTTLS not offered), a login taken but not asked for, every mail parsed (mailparser) and kept; a tiny HTTP
 * endpoint beside it lists them, for specs that run in Playwright's workers.
 */
export async function startSmtpStandIn(): Promise<SmtpStandIn> {
  const mails: ReceivedMail[] = [];
  const smtp = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    authOptional: true,
    allowInsecureAuth: true,
    onAuth(auth, _session, callback) {
      callback(null, { user: auth.username ?? 'anyone' });
    },
    onData(stream, session, callback) {
      simpleParser(stream)
        .then((mail) => {
          const to = Array.isArray(mail.to) ? mail.to.map((a) => a.text).join(', ') : (mail.to?.text ?? '');
          mails.push({
            subject: mail.subject ?? '',
            to,
            recipients: session.envelope.rcptTo.map((r) => r.address),
            from: mail.from?.text ?? '',
            text: mail.text ?? '',
          });
          callback();
        })
        .catch((error: Error) => callback(error));
    },
  });
  await new Promise<void>((resolve, reject) => {
    smtp.once('error', reject);
    smtp.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (smtp.server.address() as AddressInfo).port;

  const web = http.createServer((req, res) => {
    if (req.url !== '/mails') {
      res.writeHead(404).end();
      return;
    }
    if (req.method === 'DELETE') mails.length = 0;
    else if (req.method !== 'GET') {
      res.writeHead(405).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(mails));
  });
  await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
  const mailsUrl = `http://127.0.0.1:${(web.address() as AddressInfo).port}/mails`;

  return {
    port,
    mailsUrl,
    mails,
    close: async () => {
      web.closeAllConnections();
      await Promise.all([
        new Promise<void>((resolve) => web.close(() => resolve())),
        new Promise<void>((resolve) => smtp.close(() => resolve())),
      ]);
    },
  };
}
