import type { StopNotice } from '@contracts/slack';

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

/**
 * Where a waiting stop was sent, and how that went, in words: "Sent to Slack #approvals", "Sending to Slack
 * #approvals…" (tried again after a failure: the failure too), "Could not be sent to Slack #approvals: <error>"; a
 * mail, "Sent by email to ada@example.com".
 */
export function stopNoticeText(notice: StopNotice): string {
  const channel = channelText(notice.to);
  const where = notice.via === 'slack' ? `to Slack${channel ? ` ${channel}` : ''}` : `by email to ${notice.to}`;
  switch (notice.status) {
    case 'delivered':
      return `Sent ${where}`;
    case 'pending':
      return notice.error ? `Sending ${where}… (the last try failed: ${notice.error})` : `Sending ${where}…`;
    case 'failed':
      return `Could not be sent ${where}${notice.error ? `: ${notice.error}` : ''}`;
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
