import { createHmac, timingSafeEqual } from 'node:crypto';

/** How far a request's timestamp may be from now: Slack's own advice, against replays of old requests. */
export const SLACK_SIGNATURE_WINDOW_S = 300;

/**
 * Whether a request is signed as Slack signs them (https://api.slack.com/authentication/verifying-requests-from-slack):
 * `X-Slack-Signature: v0=<hex HMAC-SHA256 of "v0:<timestamp>:<raw body>">` under the app's signing secret, with a
 * timestamp within five minutes of now. A replay inside the window is refused by its caller (the signatures seen).
 */
export function slackSignatureProblem(
  signingSecret: string,
  timestamp: string | undefined,
  rawBody: Buffer,
  signature: string | undefined,
  nowS = Date.now() / 1000,
): string | null {
  if (!timestamp || !/^\d{1,12}$/.test(timestamp)) return 'no X-Slack-Request-Timestamp';
  if (Math.abs(nowS - Number(timestamp)) > SLACK_SIGNATURE_WINDOW_S) return 'the request is more than five minutes old';
  if (!signature || !/^v0=[0-9a-f]{64}$/.test(signature)) return 'no v0 X-Slack-Signature';
  const expected = createHmac('sha256', signingSecret).update(`v0:${timestamp}:`).update(rawBody).digest();
  return timingSafeEqual(expected, Buffer.from(signature.slice(3), 'hex')) ? null : 'the signature does not match';
}
