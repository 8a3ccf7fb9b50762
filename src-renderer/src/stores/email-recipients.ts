import type { EmailRecipients } from '@contracts/email';
import { z } from 'zod';

/** Whom a scope's stops are mailed to, as the server keeps it: by role, named addresses, or nobody (null). */
export type Recipients = EmailRecipients['recipients'];
/** The choice in Settings: for a project, `none` is "as the organisation" (the server's null). */
export type RecipientsChoice = 'none' | 'deciders' | 'addresses';

/** The most addresses a scope names (the server's schema says so too: email-recipients.test.ts checks it). */
export const EMAIL_RECIPIENTS_MAX = 50;

const Address = z.email();

export interface ParsedAddresses {
  /** The addresses as typed, each once (a repeat, in any case, is dropped). */
  addresses: string[];
  /** What is not an address, as typed. */
  invalid: string[];
  /** What keeps the list from being saved, in words; null when it may be. */
  problem: string | null;
}

/**
 * The addresses typed in the textarea: one a line, or separated by commas, semicolons or spaces; each checked as the
 * server checks it (zod's `email()`).
 */
export function parseAddresses(text: string): ParsedAddresses {
  const seen = new Set<string>();
  const addresses: string[] = [];
  const invalid: string[] = [];
  for (const part of text.split(/[\s,;]+/)) {
    const address = part.trim();
    if (address === '' || seen.has(address.toLowerCase())) continue;
    seen.add(address.toLowerCase());
    (Address.safeParse(address).success ? addresses : invalid).push(address);
  }
  return { addresses, invalid, problem: listProblem(addresses, invalid) };
}

function listProblem(addresses: string[], invalid: string[]): string | null {
  if (invalid.length === 1) return `${invalid[0]} is not an email address`;
  if (invalid.length > 1) return `these are not email addresses: ${invalid.join(', ')}`;
  if (addresses.length === 0) return 'enter at least one address';
  if (addresses.length > EMAIL_RECIPIENTS_MAX)
    return `at most ${EMAIL_RECIPIENTS_MAX} addresses (there are ${addresses.length})`;
  return null;
}

export const choiceOf = (recipients: Recipients): RecipientsChoice =>
  recipients === null ? 'none' : recipients === 'deciders' ? 'deciders' : 'addresses';

/** The addresses as the textarea shows them: one a line. */
export const addressesText = (recipients: Recipients): string =>
  Array.isArray(recipients) ? recipients.join('\n') : '';

/** What the server is sent for a choice, or why it cannot be sent yet. */
export function recipientsBody(
  choice: RecipientsChoice,
  text: string,
): { recipients: Recipients; problem: null } | { recipients: null; problem: string } {
  if (choice === 'none') return { recipients: null, problem: null };
  if (choice === 'deciders') return { recipients: 'deciders', problem: null };
  const parsed = parseAddresses(text);
  return parsed.problem === null
    ? { recipients: parsed.addresses, problem: null }
    : { recipients: null, problem: parsed.problem };
}

/** Whether two choices send the same mails (the same addresses in any order and case). */
export function sameRecipients(a: Recipients, b: Recipients): boolean {
  if (!Array.isArray(a) || !Array.isArray(b)) return a === b;
  const key = (list: string[]) => [...new Set(list.map((s) => s.toLowerCase()))].sort().join('\n');
  return key(a) === key(b);
}

/** How many addresses a line names before "and N more". */
export const ADDRESSES_SHOWN = 3;

/** "ann@example.com", "ann@… and bob@…", "ann@…, bob@…, cat@… and 2 more"; empty for none. */
export function addressList(addresses: readonly string[]): string {
  if (addresses.length <= 1) return addresses[0] ?? '';
  if (addresses.length <= ADDRESSES_SHOWN) return `${addresses.slice(0, -1).join(', ')} and ${addresses.at(-1)}`;
  return `${addresses.slice(0, ADDRESSES_SHOWN).join(', ')} and ${addresses.length - ADDRESSES_SHOWN} more`;
}

/**
 * A scope's choice in words: "nobody", "the people who may decide (by role)", "ann@example.com and bob@example.com".
 * A project without its own choice follows its organisation's: `inherited` is that, when it is known.
 */
export function recipientsText(recipients: Recipients, scope: 'org' | 'project', inherited?: Recipients): string {
  if (recipients === 'deciders') return 'the people who may decide (by role)';
  if (Array.isArray(recipients)) return addressList(recipients) || 'nobody';
  if (scope === 'org') return 'nobody';
  return inherited === undefined
    ? "as the organisation's"
    : `as the organisation's: ${recipientsText(inherited, 'org')}`;
}
