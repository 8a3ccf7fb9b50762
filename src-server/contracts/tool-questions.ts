import { z } from 'zod';

/**
 * A question an MCP server the service calls asks a person mid-call (MCP elicitation; docs/approvals.md#questions-
 * from-tool-servers): a stop of its own kind, `question`, listed with the gates and tool calls that wait, answered at
 * POST /stops/{id}/answer. Its answer goes back to the server, which goes on with the call.
 */

/** How long a question waits for its answer; then the server hears `cancel` and the call goes on. */
export const DEFAULT_QUESTION_EXPIRY_S = 3600;

/** The longest a form field's text answer may be: a server asks for a name or a choice, not a document. */
export const MAX_ANSWER_FIELD_CHARS = 10_000;

export const ToolQuestionModeSchema = z.enum(['form', 'url']).meta({
  description: '`form`: fields to fill in, by the schema; `url`: a page of the server to open in your own browser',
});

export const ToolQuestionSchema = z
  .object({
    server: z.string().meta({ description: 'the MCP server that asks' }),
    tool: z.string().meta({ description: '`<server>.<tool>`: the call that asks' }),
    call_id: z.string(),
    mode: ToolQuestionModeSchema,
    message: z.string().meta({ description: "the server's question: untrusted text, never HTML" }),
    requested_schema: z
      .record(z.string(), z.unknown())
      .nullable()
      .meta({ description: 'form mode: the fields asked for (a flat JSON Schema object of primitive fields)' }),
    url: z
      .string()
      .nullable()
      .meta({ description: 'url mode: the page to open (http or https); the service never opens it itself' }),
    url_host: z.string().nullable().meta({ description: "url mode: the page's host, to show before the link" }),
  })
  .meta({ id: 'ToolQuestion' });
export type ToolQuestion = z.infer<typeof ToolQuestionSchema>;

/** A question of a run that waits for a person, as the run's detail lists it. */
export const OpenToolQuestionSchema = ToolQuestionSchema.extend({
  stop_id: z.string().meta({ description: '`<run id>:<event id>`: answered at POST /stops/{stop_id}/answer' }),
  node: z.string(),
  asked_at: z.string(),
  expires_at: z.string(),
}).meta({ id: 'OpenToolQuestion' });
export type OpenToolQuestion = z.infer<typeof OpenToolQuestionSchema>;

export const QuestionActionSchema = z.enum(['accept', 'decline', 'cancel']).meta({
  description:
    '`accept` with the fields filled in (form) or once the page is done (url); `decline`; `cancel`: dismissed',
});
export type QuestionAction = z.infer<typeof QuestionActionSchema>;

const AnswerValueSchema = z.union([
  z.string().max(MAX_ANSWER_FIELD_CHARS),
  z.number(),
  z.boolean(),
  z.array(z.string().max(MAX_ANSWER_FIELD_CHARS)).max(100),
]);

export const AnswerQuestionBodySchema = z
  .object({
    action: QuestionActionSchema,
    content: z
      .record(z.string().max(200), AnswerValueSchema)
      .optional()
      .meta({ description: 'accept in form mode: the fields, as the requested schema names and types them' }),
  })
  .meta({ id: 'AnswerQuestionBody' });
export type AnswerQuestionBody = z.infer<typeof AnswerQuestionBodySchema>;

export const QuestionAnsweredSchema = z
  .object({
    stop_id: z.string(),
    run_id: z.uuid(),
    action: QuestionActionSchema,
  })
  .meta({ id: 'QuestionAnswered' });
export type QuestionAnswered = z.infer<typeof QuestionAnsweredSchema>;

/** Where a question stands: asked, then answered (accept, decline, cancel), expired, or withdrawn (its call ended). */
export type ToolQuestionState = 'asked' | QuestionAction | 'expired' | 'withdrawn';

/** What a server asks, as the service's MCP client hands it to the run that made the call. */
export interface ToolQuestionRequest {
  mode: 'form' | 'url';
  message: string;
  requestedSchema: Record<string, unknown> | null;
  url: string | null;
}

/** What goes back to the server: the person's answer, or `cancel` when nobody answered (expired, withdrawn). */
export interface ToolQuestionAnswer {
  action: QuestionAction;
  content?: Record<string, unknown>;
}

/**
 * Puts a tool server's question to a person, for the call that asks, and waits for the answer. `withdrawn` aborts
 * when the server stops asking (it cancelled its request): the question is withdrawn.
 */
export type QuestionAsker = (question: ToolQuestionRequest, withdrawn?: AbortSignal) => Promise<ToolQuestionAnswer>;

/** A tool server's question as Slack's message and a mail show it: what it asks, in words for people. */
export interface QuestionNotice {
  agent: string;
  project: string;
  tool: string;
  server: string;
  message: string;
  mode: 'form' | 'url';
  /** The form's fields as people read them ("Release name (required)"); empty in url mode. */
  fields: string[];
  /** In url mode, the page's host only: never linked, and the service never opens such a page. */
  urlHost: string | null;
  expiresAt: string;
}
