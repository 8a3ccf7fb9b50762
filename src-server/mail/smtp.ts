import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import nodemailer from 'nodemailer';
import { InternalAddressError, isLocalhostName } from '../net/guarded-lookup';
import { isInternalAddress } from '../net/internal-address';

/** The instance's mail server, as the service connects to it. */
export interface SmtpServer {
  host: string;
  port: number;
  secure: boolean;
  from: string;
  user: string | null;
  password: string | null;
}

export interface Mail {
  to: string;
  subject: string;
  text: string;
  html: string;
}

const TIMEOUT_MS = 15_000;

/**
 * The address the mail server's name has now, checked as a webhook's is (docs/webhooks.md#addresses): one on the
 * server's own network is refused unless WEBHOOK_ALLOW_PRIVATE_URLS allows it. The connection then goes to that
 * address, whatever DNS answers later, and TLS checks the certificate against the name.
 */
export async function mailServerAddress(host: string, allowPrivate: boolean): Promise<string> {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  const addresses = isIP(bare) ? [bare] : (await lookup(bare, { all: true })).map((a) => a.address);
  const internal = isLocalhostName(bare) || addresses.some(isInternalAddress);
  if (internal && !allowPrivate) {
    throw new InternalAddressError(bare, 'no mail is sent there (WEBHOOK_ALLOW_PRIVATE_URLS=true allows it)');
  }
  return addresses[0]!;
}

/** Sends one mail through the server (nodemailer's SMTP transport), within a time limit; its Message-ID. */
export async function sendMail(server: SmtpServer, mail: Mail, allowPrivate: boolean): Promise<string | null> {
  const address = await mailServerAddress(server.host, allowPrivate);
  const transport = nodemailer.createTransport({
    host: address,
    port: server.port,
    secure: server.secure,
    ...(server.user ? { auth: { user: server.user, pass: server.password ?? '' } } : {}),
    tls: { servername: isIP(server.host) ? undefined : server.host },
    connectionTimeout: TIMEOUT_MS,
    greetingTimeout: TIMEOUT_MS,
    socketTimeout: TIMEOUT_MS,
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  try {
    const sent = await transport.sendMail({ from: server.from, ...mail });
    return typeof sent.messageId === 'string' ? sent.messageId : null;
  } finally {
    transport.close();
  }
}
