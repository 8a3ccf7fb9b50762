import { EmailRecipientsBodySchema } from '@contracts/email';
import { describe, expect, it } from 'vitest';
import {
  addressList,
  addressesText,
  choiceOf,
  EMAIL_RECIPIENTS_MAX,
  parseAddresses,
  recipientsBody,
  recipientsText,
  sameRecipients,
} from './email-recipients';

const many = (n: number) => Array.from({ length: n }, (_, i) => `p${i}@example.com`);

describe('the addresses typed for a scope’s mail', () => {
  it('takes one a line, or separated by commas, semicolons or spaces, each once', () => {
    expect(parseAddresses('ann@example.com\nbob@example.com').addresses).toEqual([
      'ann@example.com',
      'bob@example.com',
    ]);
    expect(parseAddresses(' ann@example.com, bob@example.com;cat@example.com  dan@example.com ,\n\n')).toEqual({
      addresses: ['ann@example.com', 'bob@example.com', 'cat@example.com', 'dan@example.com'],
      invalid: [],
      problem: null,
    });
    // A repeat, in any case, is dropped: the first spelling stays.
    expect(parseAddresses('Ann@Example.com\nann@example.com').addresses).toEqual(['Ann@Example.com']);
  });

  it('says what is not an address, an empty list, and a list longer than the server takes', () => {
    expect(parseAddresses('ann@example.com, ann')).toMatchObject({
      addresses: ['ann@example.com'],
      invalid: ['ann'],
      problem: 'ann is not an email address',
    });
    expect(parseAddresses('ann, @example.com').problem).toBe('these are not email addresses: ann, @example.com');
    expect(parseAddresses(' \n, ').problem).toBe('enter at least one address');
    expect(parseAddresses(many(EMAIL_RECIPIENTS_MAX).join('\n')).problem).toBeNull();
    expect(parseAddresses(many(EMAIL_RECIPIENTS_MAX + 1).join('\n')).problem).toBe(
      'at most 50 addresses (there are 51)',
    );
  });

  it("agrees with the server's own schema on what an address is and how many it takes", () => {
    const ok = (recipients: unknown) => EmailRecipientsBodySchema.safeParse({ recipients }).success;
    for (const text of ['ann@example.com', 'a.b+c@mail.example.co.uk', 'ann', 'ann@', '@example.com', 'ann@example'])
      expect(ok([text]), text).toBe(parseAddresses(text).problem === null);
    expect(ok(many(EMAIL_RECIPIENTS_MAX))).toBe(true);
    expect(ok(many(EMAIL_RECIPIENTS_MAX + 1))).toBe(false);
  });
});

describe('the choice in Settings, and what is sent for it', () => {
  it('reads the kept choice into the form', () => {
    expect(choiceOf(null)).toBe('none');
    expect(choiceOf('deciders')).toBe('deciders');
    expect(choiceOf(['ann@example.com'])).toBe('addresses');
    expect(addressesText(['ann@example.com', 'bob@example.com'])).toBe('ann@example.com\nbob@example.com');
    expect(addressesText('deciders')).toBe('');
  });

  it('sends null for nobody (a project: as the organisation), deciders, or the parsed list', () => {
    expect(recipientsBody('none', 'ann@example.com')).toEqual({ recipients: null, problem: null });
    expect(recipientsBody('deciders', 'junk')).toEqual({ recipients: 'deciders', problem: null });
    expect(recipientsBody('addresses', 'ann@example.com, bob@example.com')).toEqual({
      recipients: ['ann@example.com', 'bob@example.com'],
      problem: null,
    });
    expect(recipientsBody('addresses', '')).toEqual({ recipients: null, problem: 'enter at least one address' });
    for (const body of [
      recipientsBody('none', ''),
      recipientsBody('deciders', ''),
      recipientsBody('addresses', 'a@b.co'),
    ])
      expect(EmailRecipientsBodySchema.safeParse({ recipients: body.recipients }).success).toBe(true);
  });

  it('tells a change from the same addresses in another order or case', () => {
    expect(sameRecipients(['a@x.co', 'b@x.co'], ['B@x.co', 'a@x.co'])).toBe(true);
    expect(sameRecipients(['a@x.co'], ['a@x.co', 'b@x.co'])).toBe(false);
    expect(sameRecipients('deciders', 'deciders')).toBe(true);
    expect(sameRecipients(null, 'deciders')).toBe(false);
    expect(sameRecipients(null, [])).toBe(false);
  });

  it('words a choice, and a project’s that follows its organisation', () => {
    expect(recipientsText(null, 'org')).toBe('nobody');
    expect(recipientsText('deciders', 'org')).toBe('the people who may decide (by role)');
    expect(recipientsText(['ann@example.com'], 'project')).toBe('ann@example.com');
    expect(recipientsText(null, 'project')).toBe("as the organisation's");
    expect(recipientsText(null, 'project', ['ann@example.com', 'bob@example.com'])).toBe(
      "as the organisation's: ann@example.com and bob@example.com",
    );
    expect(recipientsText(null, 'project', null)).toBe("as the organisation's: nobody");
  });

  it('names a few addresses, and counts the rest of many', () => {
    expect(addressList([])).toBe('');
    expect(addressList(['a@x.co'])).toBe('a@x.co');
    expect(addressList(['a@x.co', 'b@x.co', 'c@x.co'])).toBe('a@x.co, b@x.co and c@x.co');
    expect(addressList(many(5))).toBe('p0@example.com, p1@example.com, p2@example.com and 2 more');
  });
});
