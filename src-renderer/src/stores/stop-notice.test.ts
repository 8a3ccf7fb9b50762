import type { StopNotice } from '@contracts/slack';
import { describe, expect, it } from 'vitest';
import { channelText, deliveryStatusText, stopNoticeText } from './stop-notice';

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

  it("words a delivery's status for the table in Settings", () => {
    expect(deliveryStatusText('pending')).toBe('sending…');
    expect(deliveryStatusText('delivered')).toBe('delivered');
    expect(deliveryStatusText('failed')).toBe('failed');
  });
});
