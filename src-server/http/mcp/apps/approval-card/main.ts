import {
  App,
  applyDocumentTheme,
  applyHostStyleVariables,
  type McpUiHostContext,
} from '@modelcontextprotocol/ext-apps';
import { errorMessage } from '../../../../contracts/errors';
import { renderCard, type CardHost } from './card';
import { el } from './dom';
import { phasesOf, shownOf, type ToolResult } from './stops';

/**
 * The approval card as an MCP App (docs/mcp.md#the-approval-card-mcp-apps): the host hands it the result of the tool
 * it is shown for (run_agent, get_run, list_approvals), and it decides through the host with this server's
 * decide_approval.
 */

const root = document.getElementById('cards')!;
const app = new App({ name: 'agent-workflow-approval-card', version: '1.0.0' }, {});
let context: McpUiHostContext = {};

const notice = (text: string) => root.replaceChildren(el('p', { class: 'notice', role: 'status' }, text));

/** The host's look (light or dark, its colours and type), where it gives one; the card's own otherwise. */
function follow(changed: McpUiHostContext) {
  context = { ...context, ...changed };
  if (changed.theme) applyDocumentTheme(changed.theme);
  if (changed.styles?.variables) applyHostStyleVariables(changed.styles.variables);
}

/** A tool of this server through the host; a call the host could not make reads as an error result. */
async function call(name: string, args: Record<string, unknown>): Promise<ToolResult> {
  try {
    return await app.callServerTool({ name, arguments: args });
  } catch (error) {
    return { isError: true, content: [{ type: 'text', text: errorMessage(error) }] };
  }
}

/** A time as the host's person reads it: in her language and time zone, where the host says which. */
function time(iso: string): string {
  try {
    const format = { dateStyle: 'medium', timeStyle: 'short', timeZone: context.timeZone } as const;
    return new Intl.DateTimeFormat(context.locale, format).format(new Date(iso));
  } catch {
    return iso;
  }
}

const host: CardHost = {
  decide: (args) => call('decide_approval', args),
  phasesOf: async (runId) => {
    const run = await call('get_run', { run_id: runId });
    return run.isError ? [] : phasesOf(run.structuredContent);
  },
  time,
};

app.ontoolresult = (result) => {
  const shown = shownOf(result);
  if ('notice' in shown) return notice(shown.notice);
  const openLink = app.getHostCapabilities()?.openLinks ? (url: string) => void app.openLink({ url }) : undefined;
  root.replaceChildren(...shown.stops.map((stop, n) => renderCard(stop, n, { ...host, openLink })));
};
app.ontoolcancelled = ({ reason }) => notice(`The call was cancelled${reason ? `: ${reason}` : '.'}`);
app.onhostcontextchanged = follow;

notice('Waiting for the result…');
app.connect().then(
  () => follow(app.getHostContext() ?? {}),
  (error: unknown) => notice(`The card could not reach its host: ${errorMessage(error)}`),
);
