import { describe, expect, it } from 'vitest';
import { fillPublishArgument, titleSlug } from './publish-placeholders';

describe('titleSlug', () => {
  it('keeps the words of a title as lower-case ASCII joined by dashes', () => {
    expect(titleSlug('Fix the login redirect (#42)')).toBe('fix-the-login-redirect-42');
    expect(titleSlug('Überprüfe die Änderung à la café')).toBe('uberprufe-die-anderung-a-la-cafe');
    expect(titleSlug('  ../../etc/passwd  ')).toBe('etc-passwd');
  });

  it('cuts a long title at a dash within 60 characters', () => {
    const slug = titleSlug('Review the change that moves the session store from memory to PostgreSQL and back');
    expect(slug).toBe('review-the-change-that-moves-the-session-store-from-memory');
    expect(slug.length).toBeLessThanOrEqual(60);
    expect(titleSlug('a'.repeat(100))).toBe('a'.repeat(60));
  });

  it('names a title with nothing to keep "untitled"', () => {
    expect(titleSlug('???')).toBe('untitled');
    expect(titleSlug('検討してください')).toBe('untitled');
    expect(titleSlug('')).toBe('untitled');
  });
});

describe('fillPublishArgument', () => {
  it('fills the run, the thread, its title and a short id', () => {
    const context = {
      runId: '0b7f3c2e-9d41-4a7e-8a55-2f0c1d9e6b3a',
      threadId: '5d2c9b8a-1e3f-4c6d-9a7b-8e0f1a2b3c4d',
      threadName: 'Review the retry change',
    };
    expect(fillPublishArgument('reviews/{thread_title}-{short_id}.md', context)).toBe(
      'reviews/review-the-retry-change-0b7f3c2e.md',
    );
    expect(fillPublishArgument('out/{thread_id}/{run_id}.md', context)).toBe(
      'out/5d2c9b8a-1e3f-4c6d-9a7b-8e0f1a2b3c4d/0b7f3c2e-9d41-4a7e-8a55-2f0c1d9e6b3a.md',
    );
  });
});
