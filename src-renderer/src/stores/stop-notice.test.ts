import type { StopNotice } from '@contracts/slack';
import { describe, expect, it } from 'vitest';
import { channelText, deliveryStatusText, stopNoticeText, stopNoticeTitle } from './stop-notice';

const notice = (extra: Partial<StopNotice> = {}): StopNotice => ({
  via: 'slack',
  to: '#approvals',
  status: 'delivered',
  error: null,
  ...extra,
});

describe('where a stop was sent, in words', () => {
  it('names a channel as people write it', () => {
    expect(channelText('#approvals')).toBe('#approvals');
    expect(channelText('approvals')).toBe('#approvals');
    expect(channelText('C0123ABC')).toBe('C0123ABC');
    // Nothing posted yet: the server knows no channel, and says Slack.
    expect(channelText('Slack')).toBe('');
  });

  it('says it was sent, is being sent, or could not be sent, with why', () => {
    expect(stopNoticeText(notice())).toBe('Sent to Slack #approvals');
    expect(stopNoticeText(notice({ status: 'pending' }))).toBe('Sending to Slack #approvals…');
    expect(stopNoticeText(notice({ status: 'pending', to: 'Slack' }))).toBe('Sending to Slack…');
    expect(stopNoticeText(notice({ status: 'pending', error: 'Slack answered 503' }))).toBe(
      'Sending to Slack #approvals… (the last try failed: Slack answered 503)',
    );
    expect(stopNoticeText(notice({ status: 'failed', error: 'Slack refused chat.postMessage: not_in_channel' }))).toBe(
      'Could not be sent to Slack #approvals: Slack refused chat.postMessage: not_in_channel',
    );
    expect(stopNoticeText(notice({ status: 'failed', to: 'C0123ABC' }))).toBe('Could not be sent to Slack C0123ABC');
    expect(stopNoticeText(notice({ via: 'email', to: 'ada@example.com' }))).toBe('Sent by email to ada@example.com');
  });

  it('names the addresses a mail went to, a few of many, and says when it went to nobody', () => {
    const mail = (extra: Partial<StopNotice>) => notice({ via: 'email', ...extra });
    expect(stopNoticeText(mail({ to: 'ann@example.com, bob@example.com' }))).toBe(
      'Sent by email to ann@example.com and bob@example.com',
    );
    const five = 'a@x.co, b@x.co, c@x.co, d@x.co, e@x.co';
    expect(stopNoticeText(mail({ to: five }))).toBe('Sent by email to a@x.co, b@x.co, c@x.co and 2 more');
    // The whole list is the line's title, when the line names only some.
    expect(stopNoticeTitle(mail({ to: five }))).toBe(five);
    expect(stopNoticeTitle(mail({ to: 'a@x.co, b@x.co' }))).toBeUndefined();
    expect(stopNoticeTitle(notice())).toBeUndefined();
    // The server says "nobody yet" until a mail has gone.
    expect(stopNoticeText(mail({ to: 'nobody yet', status: 'pending' }))).toBe('Sending by email…');
    expect(stopNoticeText(mail({ to: 'nobody yet', status: 'delivered' }))).toBe(
      'Not sent by email: nobody to send it to',
    );
  });

  it('says, while a mail is retried or after it gave up, whom it reached and why the rest did not get it', () => {
    const mail = (extra: Partial<StopNotice>) => notice({ via: 'email', ...extra });
    const refused = 'the mail server did not take the mail: 421 try later';
    expect(stopNoticeText(mail({ to: 'nobody yet', status: 'pending', error: refused }))).toBe(
      `Sending by email… (the last try failed: ${refused})`,
    );
    expect(stopNoticeText(mail({ to: 'ann@example.com', status: 'pending', error: refused }))).toBe(
      `Sending by email… (sent to ann@example.com so far; the last try failed: ${refused})`,
    );
    expect(stopNoticeText(mail({ to: 'nobody yet', status: 'failed', error: refused }))).toBe(
      `Could not be sent by email: ${refused}`,
    );
    expect(stopNoticeText(mail({ to: 'ann@example.com', status: 'failed', error: refused }))).toBe(
      `Could not be sent by email to everyone (only to ann@example.com): ${refused}`,
    );
  });

  it("words a delivery's status for the table in Settings", () => {
    expect(deliveryStatusText('pending')).toBe('sending…');
    expect(deliveryStatusText('delivered')).toBe('delivered');
    expect(deliveryStatusText('failed')).toBe('failed');
  });
});
