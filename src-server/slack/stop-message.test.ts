import { describe, expect, it } from 'vitest';
import { escapeSlack, stopMessage, stopModal, type StopMessageState } from './stop-message';

const state = (over: Partial<StopMessageState> = {}): StopMessageState => ({
  stopId: '11111111-2222-4333-8444-555555555555:7',
  round: 1,
  agent: 'code-review',
  project: 'Default',
  question: 'Publish this review?',
  node: 'gate',
  context: { analysis: 'Looks fine.' },
  toolCall: null,
  decideRole: 'member',
  approvals: { needed: 1, by: [] },
  expiresAt: null,
  status: { kind: 'waiting' },
  studioUrl: 'https://agents.example.test/ui?thread=t',
  ...over,
});

const all = (message: { blocks: object[] }) => JSON.stringify(message.blocks);

describe("a stop's Slack message", () => {
  it('escapes model output, shows it verbatim (no links or mentions made of it), and cannot leave its code block', () => {
    const message = stopMessage(
      state({ context: { analysis: 'See <https://evil.example|here> <!here> & ```break out``` <@U123>' } }),
    );
    const text = all(message);
    expect(text).toContain('&lt;https://evil.example|here&gt; &lt;!here&gt; &amp;');
    expect(text).not.toMatch(/<https:\/\/evil|<!here>|<@U123>/);
    expect(text).not.toContain('```break');
    for (const block of message.blocks as { text?: { type: string; verbatim?: boolean } }[]) {
      if (block.text?.type === 'mrkdwn') expect(block.text.verbatim).toBe(true);
    }
    expect(escapeSlack('a < b && c > d')).toBe('a &lt; b &amp;&amp; c &gt; d');
  });

  it("carries the stop's id and round on every button, and offers Edit only where Slack's input can hold the text", () => {
    const buttons = (m: { blocks: object[] }) =>
      (
        m.blocks.find((b) => (b as { type: string }).type === 'actions') as {
          elements: { action_id: string; value: string }[];
        }
      ).elements;
    const shown = buttons(stopMessage(state({ round: 3 })));
    expect(shown.map((b) => b.action_id)).toEqual(['stop.approve', 'stop.edit', 'stop.respond', 'stop.reject']);
    for (const b of shown) expect(JSON.parse(b.value)).toEqual({ stop: state().stopId, round: 3 });
    const long = buttons(stopMessage(state({ context: { analysis: 'x'.repeat(3001) } })));
    expect(long.map((b) => b.action_id)).not.toContain('stop.edit');
  });

  it('says how the stop ended, and who decided it through which door, without buttons', () => {
    const decided = stopMessage(
      state({
        status: { kind: 'decided', decision: 'reject', by: 'Ann', at: 'now', via: 'slack', reason: 'not <yet>' },
      }),
    );
    expect(all(decided)).toContain('Rejected by Ann via Slack: not &lt;yet&gt;');
    expect(all(decided)).not.toContain('stop.approve');
    expect(all(stopMessage(state({ status: { kind: 'expired', outcome: 'reject', at: 'now' } })))).toContain(
      'Expired (reject)',
    );
    expect(all(stopMessage(state({ approvals: { needed: 2, by: ['Bob'] } })))).toContain('Approvals: 1 of 2');
  });

  it("shows a tool call's arguments, and its edit modal holds them as JSON", () => {
    const call = state({ context: {}, toolCall: { tool: 'github.create_issue', arguments: '{"title":"<b>x</b>"}' } });
    expect(all(stopMessage(call))).toContain('&lt;b&gt;x&lt;/b&gt;');
    const modal = stopModal('edit', call, { stop: call.stopId, round: 1, channel: 'C1' }) as {
      callback_id: string;
      private_metadata: string;
      blocks: { block_id?: string; element?: { initial_value?: string } }[];
    };
    expect(modal.callback_id).toBe('stop.edit');
    expect(JSON.parse(modal.private_metadata)).toEqual({ stop: call.stopId, round: 1, channel: 'C1' });
    const input = modal.blocks.find((b) => b.block_id === 'arguments');
    expect(JSON.parse(input!.element!.initial_value!)).toEqual({ title: '<b>x</b>' });
  });
});
