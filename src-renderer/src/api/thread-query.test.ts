import { describe, expect, it } from 'vitest';
import { threadListQuery } from './thread-query';

const params = (query: string) => Object.fromEntries(new URLSearchParams(query));

describe('threadListQuery', () => {
  it('asks for a page, after a cursor, of a project', () => {
    expect(threadListQuery(50)).toBe('limit=50');
    expect(params(threadListQuery(20, 'abc+/=', '00000000-0000-4000-8000-000000000003'))).toEqual({
      limit: '20',
      cursor: 'abc+/=',
      project_id: '00000000-0000-4000-8000-000000000003',
    });
  });

  it('encodes the cursor and the words, so that a +, & or quote reaches the server as typed', () => {
    const query = threadListQuery(50, 'a+b&c', null, { q: '"connection refused" -staging & more' });
    expect(query).toContain('cursor=a%2Bb%26c');
    expect(params(query).q).toBe('"connection refused" -staging & more');
  });

  it('sends each filter that says something, and none that does not', () => {
    expect(
      params(
        threadListQuery(50, null, null, {
          q: '  timeout  ',
          agent: 'change-review',
          status: 'waiting_approval',
          started_by: '00000000-0000-0000-0000-000000000001',
          from: '2025-03-01T00:00:00.000Z',
          to: '2025-03-08T00:00:00.000Z',
        }),
      ),
    ).toEqual({
      limit: '50',
      q: 'timeout',
      agent: 'change-review',
      status: 'waiting_approval',
      started_by: '00000000-0000-0000-0000-000000000001',
      from: '2025-03-01T00:00:00.000Z',
      to: '2025-03-08T00:00:00.000Z',
    });
    expect(threadListQuery(50, '', '', { q: '   ', agent: ' ' })).toBe('limit=50');
  });

  it('cuts the words to the 200 characters the server takes', () => {
    expect(params(threadListQuery(50, null, null, { q: 'x'.repeat(250) })).q).toHaveLength(200);
  });
});
