import { describe, expect, it } from 'vitest';
import { stopMail } from './stop-mail';

const state = {
  agent: 'code-review',
  project: 'Default',
  question: 'Publish\r\nBcc: someone@example.com',
  node: 'gate',
  context: { analysis: '<img src=x onerror=alert(1)> & "quotes" <a href="https://evil.example">click</a>' },
  toolCall: null,
  expiresAt: null,
  studioUrl: 'https://agents.example.test/ui?thread=t',
  decisionUrl: 'https://agents.example.test/stop-links/abc',
};

describe("a stop's mail", () => {
  it('shows model output as text in both parts, never markup or a link of its own', () => {
    const mail = stopMail('ann@example.test', state);
    expect(mail.html).toContain('&lt;img src=x onerror=alert(1)&gt; &amp; &quot;quotes&quot; &lt;a href=&quot;');
    expect(mail.html).not.toContain('<img');
    expect(mail.html).not.toContain('href="https://evil.example"');
    expect(mail.html.match(/<a href=/g)).toHaveLength(2);
    expect(mail.text).toContain('<img src=x onerror=alert(1)>');
  });

  it('keeps a question on one subject line, and offers no decision to an address that is nobody here', () => {
    const mail = stopMail('ann@example.test', state);
    expect(mail.subject).toBe('Approval needed: Publish Bcc: someone@example.com');
    expect(mail.text).toContain('https://agents.example.test/stop-links/abc');
    const without = stopMail('stranger@example.test', { ...state, decisionUrl: null });
    expect(without.text).not.toContain('/stop-links/');
    expect(without.html).toContain('cannot decide');
  });
});
