import { z } from 'zod';
import { NodeIdSchema } from './assets';

/**
 * A stop: where a run waits for a person, whatever it waits at (a gate, a tool call that asks, a question an MCP
 * server asks mid-call). Every door names it the same way: its id is the run's and the wait's (`<run id>:<wait seq>`,
 * the id of the event the run stopped with, the LangGraph door's interrupt id), new each time the run stops; its
 * round counts the versions of what it shows: 1 when the run stopped, one more each time an approver's edit changed
 * the text or the arguments while more approvals are needed. A decision names the round its person read, so that
 * nobody approves what she never saw.
 */
export const StopKindSchema = z.enum(['gate', 'tool_call', 'question']);
export type StopKind = z.infer<typeof StopKindSchema>;

export const STOP_ID_PATTERN = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}):(\d{1,15})$/;

export const StopIdSchema = z
  .string()
  .regex(STOP_ID_PATTERN, 'must be a stop id (`<run id>:<wait seq>`)')
  .meta({ description: '`<run id>:<wait seq>`: the run and the event it stopped with, new at each stop' });

export const RoundSchema = z
  .number()
  .int()
  .min(1)
  .max(1_000_000)
  .meta({
    description:
      "the stop's round the decider read (`stop.round`): one more after each approver's edit. An earlier round " +
      'answers 409; without it a decision is taken only while the stop is in its first round',
  });

export const StopSchema = z
  .object({
    kind: StopKindSchema,
    id: StopIdSchema,
    round: z.number().int().min(1),
    node: z.string().meta({ description: 'the gate, or for a tool call the phase that made it' }),
    tool_call: z
      .object({
        id: z.string(),
        tool: z.string().meta({ description: '`<server>.<tool>`' }),
        arguments_sha256: z.string().meta({ description: 'of the arguments the stop shows now' }),
      })
      .nullable()
      .meta({ description: 'set when the stop is a tool call' }),
  })
  .meta({ id: 'Stop' });
export type Stop = z.infer<typeof StopSchema>;

export const stopId = (runId: string, waitSeq: number): string => `${runId}:${waitSeq}`;

/** The run and the wait of a stop id, or null when it is none. */
export function parseStopId(id: string): { runId: string; waitSeq: number } | null {
  const match = STOP_ID_PATTERN.exec(id);
  return match ? { runId: match[1]!, waitSeq: Number(match[2]) } : null;
}

/** A stop as the views show it, from the waiting run's pending gate and the rounds its decisions opened. */
export function stopOf(
  runId: string,
  waitSeq: number,
  round: number,
  gate: { node: string; tool_call?: { call_id: string; tool: string; arguments_sha256: string } },
): Stop {
  const call = gate.tool_call;
  return {
    kind: call ? 'tool_call' : 'gate',
    id: stopId(runId, waitSeq),
    round,
    node: gate.node,
    tool_call: call ? { id: call.call_id, tool: call.tool, arguments_sha256: call.arguments_sha256 } : null,
  };
}

/** A decision at a stop, in one shape for every door (POST /stops/{stop_id}/decision). */
export const StopDecisionBodySchema = z
  .object({
    decision: z.enum(['approve', 'reject', 'respond']),
    round: RoundSchema.optional(),
    reason: z.string().max(2000).optional(),
    response: z
      .string()
      .trim()
      .min(1, 'must not be empty')
      .max(64 * 1024)
      .optional()
      .meta({
        description: 'respond: for a gate, feedback for the phase before it; for a tool call, the answer in its place',
      }),
    edits: z.record(NodeIdSchema, z.string().max(200_000)).optional().meta({
      description: 'approve at a gate: node id → new text for the output of a phase the gate shows (an edit)',
    }),
    arguments: z.record(z.string(), z.unknown()).optional().meta({
      description: "approve a tool call: the arguments it runs with instead of the model's (an edit)",
    }),
    allow_for_thread: z.boolean().optional().meta({
      description: 'approve a tool call: also allow the tool for the rest of the thread',
    }),
  })
  .superRefine((body, ctx) => {
    if (body.decision === 'respond' && body.response === undefined)
      ctx.addIssue({ code: 'custom', path: ['response'], message: 'is required to respond' });
    if (body.decision !== 'respond' && body.response !== undefined)
      ctx.addIssue({ code: 'custom', path: ['response'], message: 'is only for respond' });
    for (const field of ['edits', 'arguments', 'allow_for_thread'] as const) {
      if (body.decision !== 'approve' && body[field] !== undefined)
        ctx.addIssue({ code: 'custom', path: [field], message: 'is only for approve' });
    }
  })
  .meta({ id: 'StopDecisionBody' });
export type StopDecisionBody = z.infer<typeof StopDecisionBodySchema>;

/** A thread in the studio, for links that leave the service (MCP results, Slack messages, mail). */
export const studioThreadUrl = (baseUrl: string, threadId: string) => `${baseUrl}/ui?thread=${threadId}`;
