import type { StopNotice } from '@contracts/slack';
import { ADDRESSES_SHOWN, addressList } from './email-recipients';

/**
 * A Slack channel as people write it: `#approvals` for a name (configured with or without its `#`), an id
 * (`C0123ABC`) as it is. Empty when the server does not know the channel yet (it says `Slack`: nothing posted so far).
 */
export function channelText(to: string): string {
  const channel = to.trim();
  if (channel === '' || channel === 'Slack') return '';
  if (channel.startsWith('#') || /^[CGD][A-Z0-9]{2,20}$/.test(channel)) return channel;
  return `#${channel}`;
}

/** The addresses a stop was mailed to, as the server lists them ("ann@example.com, bob@example.com"; "nobody yet"). */
export const mailedAddresses = (to: string): string[] =>
  to
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a.includes('@'));

/**
 * Those addresses in words: all of them when they are few, the first ones and how many more otherwise (the whole list
 * is the line's title: stopNoticeTitle). Empty when none was mailed (yet).
 */
export const mailedText = (to: string): string => addressList(mailedAddresses(to));

/** Every address of a mail that its line names only in part; nothing otherwise. */
export function stopNoticeTitle(notice: StopNotice): string | undefined {
  if (notice.via !== 'email') return undefined;
  const addresses = mailedAddresses(notice.to);
  return addresses.length > ADDRESSES_SHOWN ? addresses.join(', ') : undefined;
}

/**
 * Where a waiting stop was sent, and how that went, in words: "Sent to Slack #approvals", "Sending to Slack
 * #approvals…" (tried again after a failure: the failure too), "Could not be sent to Slack #approvals: <error>"; a
 * mail, "Sent by email to ada@example.com and ben@example.com" (mailText).
 */
export function stopNoticeText(notice: StopNotice): string {
  if (notice.via === 'email') return mailText(notice);
  const channel = channelText(notice.to);
  const where = `to Slack${channel ? ` ${channel}` : ''}`;
  switch (notice.status) {
    case 'delivered':
      return `Sent ${where}`;
    case 'pending':
      return notice.error ? `Sending ${where}… (the last try failed: ${notice.error})` : `Sending ${where}…`;
    case 'failed':
      return `Could not be sent ${where}${notice.error ? `: ${notice.error}` : ''}`;
  }
}

/**
 * A stop's mail: the server lists the addresses mailed so far, one mail each, so while it is retried or after it gave
 * up, those are the ones that got it; delivered without any, the stop's people had no address.
 */
function mailText(notice: StopNotice): string {
  const mailed = mailedText(notice.to);
  const why = notice.error ? `: ${notice.error}` : '';
  switch (notice.status) {
    case 'delivered':
      return mailed ? `Sent by email to ${mailed}` : 'Not sent by email: nobody to send it to';
    case 'pending': {
      const sofar = mailed ? `sent to ${mailed} so far` : '';
      const failed = notice.error ? `the last try failed: ${notice.error}` : '';
      const aside = [sofar, failed].filter(Boolean).join('; ');
      return `Sending by email…${aside ? ` (${aside})` : ''}`;
    }
    case 'failed':
      return mailed
        ? `Could not be sent by email to everyone (only to ${mailed})${why}`
        : `Could not be sent by email${why}`;
  }
}

/** A Slack delivery's status, for the table of the latest deliveries in Settings. */
export function deliveryStatusText(status: StopNotice['status']): string {
  switch (status) {
    case 'delivered':
      return 'delivered';
    case 'pending':
      return 'sending…';
    case 'failed':
      return 'failed';
  }
}
