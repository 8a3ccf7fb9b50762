import { describe, expect, it } from 'vitest';
import { answerOutcomeText, isWebAddress, questionHeading, questionStateText } from './tool-question';

describe("a tool server's question in words", () => {
  it('says who asks, and for a page at which host', () => {
    expect(questionHeading({ tool: 'asker.ask_release', mode: 'form', url_host: null })).toBe('asker.ask_release asks');
    expect(questionHeading({ tool: 'asker.connect', mode: 'url', url_host: 'accounts.example.com' })).toBe(
      'asker.connect asks you to open a page at accounts.example.com',
    );
  });

  it('makes a link of a web page only', () => {
    expect(isWebAddress('https://accounts.example.com/connect?code=1')).toBe(true);
    expect(isWebAddress('http://127.0.0.1:8080/')).toBe(true);
    expect(isWebAddress('javascript:alert(1)')).toBe(false);
    expect(isWebAddress('file:///etc/passwd')).toBe(false);
    expect(isWebAddress('not an address')).toBe(false);
    expect(isWebAddress(null)).toBe(false);
  });

  it('says what an answer does, and how a question ended', () => {
    const form = { tool: 'asker.ask_release', mode: 'form' as const };
    expect(answerOutcomeText(form, { action: 'accept', content: {} })).toBe(
      'Sent: asker.ask_release goes on with your answer.',
    );
    expect(answerOutcomeText({ ...form, mode: 'url' }, { action: 'accept' })).toContain('the page is done');
    expect(answerOutcomeText(form, { action: 'cancel' })).toMatch(/^Dismissed/);
    expect(questionStateText('accept', 'Ann')).toBe('Answered: accept by Ann');
    expect(questionStateText('decline', 'api-token')).toBe('Answered: decline by the API token');
    expect(questionStateText('expired', null)).toMatch(/^Expired/);
    expect(questionStateText('asked', null)).toBe('Waiting for an answer');
  });
});
