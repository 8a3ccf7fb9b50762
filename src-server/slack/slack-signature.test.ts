import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { slackSignatureProblem } from './slack-signature';

const SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const sign = (ts: number, body: string, secret = SECRET) =>
  `v0=${createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex')}`;

describe("Slack's request signature", () => {
  const now = 1_800_000_000;
  const body = Buffer.from('payload=%7B%22type%22%3A%22block_actions%22%7D');

  it('takes a v0 signature of the timestamp and body under the signing secret, within five minutes', () => {
    expect(slackSignatureProblem(SECRET, String(now), body, sign(now, body.toString()), now)).toBeNull();
    expect(slackSignatureProblem(SECRET, String(now - 299), body, sign(now - 299, body.toString()), now)).toBeNull();
  });

  it('refuses another secret, another body, an old or future timestamp, and a missing header', () => {
    const ok = sign(now, body.toString());
    expect(slackSignatureProblem(SECRET, String(now), body, sign(now, body.toString(), 'another'), now)).toBe(
      'the signature does not match',
    );
    expect(slackSignatureProblem(SECRET, String(now), Buffer.from(`${body}x`), ok, now)).toBe(
      'the signature does not match',
    );
    expect(slackSignatureProblem(SECRET, String(now - 301), body, sign(now - 301, body.toString()), now)).toBe(
      'the request is more than five minutes old',
    );
    expect(slackSignatureProblem(SECRET, String(now + 301), body, sign(now + 301, body.toString()), now)).toBe(
      'the request is more than five minutes old',
    );
    expect(slackSignatureProblem(SECRET, undefined, body, ok, now)).toBe('no X-Slack-Request-Timestamp');
    expect(slackSignatureProblem(SECRET, String(now), body, undefined, now)).toBe('no v0 X-Slack-Signature');
    expect(slackSignatureProblem(SECRET, String(now), body, 'v1=abc', now)).toBe('no v0 X-Slack-Signature');
  });
});
