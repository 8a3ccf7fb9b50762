import { Client, StreamableHTTPClientTransport, type CallToolResult, type Tool } from '@modelcontextprotocol/client';
import {
  AppBridge,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  getToolUiResourceUri,
  isToolVisibilityModelOnly,
} from '@modelcontextprotocol/ext-apps/app-bridge';

/**
 * A web host of MCP Apps, as small as the extension lets one be (bundled for the browser by app-host.ts). Its MCP
 * client, the SDK's, runs in the page and speaks to /mcp through the page's own server. It calls the tool the page
 * names, reads the `ui://` resource that tool names, and shows the app the way the extension asks of a web host: in a
 * sandbox proxy frame of another origin, which loads the app into a frame of its own; the SDK's AppBridge speaks to
 * the app across both, hands it the tool's input and result, and passes its calls of the server's tools on.
 */

const HOST = { name: 'e2e-mcp-apps-host', version: '1.0.0' };
const query = new URLSearchParams(location.search);
const state = document.getElementById('host-state')!;
const frame = document.getElementById('app') as HTMLIFrameElement;
const calls = document.getElementById('calls')!;

const show = (name: string, text: string) => {
  state.dataset.state = name;
  state.textContent = text;
};

/** The sandbox proxy says it is ready for the app's HTML. */
function proxyReady(): Promise<void> {
  return new Promise((resolve) => {
    const listen = (event: MessageEvent) => {
      if (event.source !== frame.contentWindow || event.data?.method !== 'ui/notifications/sandbox-proxy-ready') return;
      window.removeEventListener('message', listen);
      resolve();
    };
    window.addEventListener('message', listen);
  });
}

async function main() {
  const toolName = query.get('tool')!;
  const args = JSON.parse(query.get('arguments')!) as Record<string, unknown>;
  const client = new Client(HOST, {
    capabilities: { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: [RESOURCE_MIME_TYPE] } } },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', location.href)));
  const { tools } = await client.listTools();
  const tool: Tool | undefined = tools.find((t) => t.name === toolName);
  const uri = tool && getToolUiResourceUri(tool);
  if (!tool || !uri) throw new Error(`${toolName} names no app`);

  const [resource] = (await client.readResource({ uri })).contents;
  if (!resource || resource.mimeType !== RESOURCE_MIME_TYPE || !('text' in resource)) {
    throw new Error(`${uri} is no MCP App HTML`);
  }
  const ready = proxyReady();
  frame.src = query.get('sandbox')!;
  await ready;

  const bridge = new AppBridge(
    client,
    HOST,
    { serverTools: {}, serverResources: {}, logging: {} },
    {
      hostContext: {
        toolInfo: { tool },
        theme: 'light',
        displayMode: 'inline',
        platform: 'web',
        locale: 'en-GB',
        timeZone: 'UTC',
        containerDimensions: { width: 760, maxHeight: 2000 },
      },
    },
  );
  bridge.onsizechange = ({ height }) => {
    if (height !== undefined) frame.style.height = `${height}px`;
  };
  const initialized = new Promise<void>((resolve) => (bridge.oninitialized = () => resolve()));
  await bridge.connect(new PostMessageTransport(frame.contentWindow!, frame.contentWindow!));
  // What the extension asks of a host: an app calls its own server's tools, except those that are the model's only.
  const forward = bridge.oncalltool!;
  bridge.oncalltool = async (params, extra) => {
    const called = tools.find((t) => t.name === params.name);
    if (!called || isToolVisibilityModelOnly(called)) throw new Error(`the app may not call ${params.name}`);
    const item = document.createElement('li');
    item.textContent = params.name;
    calls.append(item);
    return forward(params, extra);
  };

  const meta = resource._meta as { ui?: { csp?: Record<string, string[]> } } | undefined;
  await bridge.sendSandboxResourceReady({ html: resource.text, csp: meta?.ui?.csp });
  await initialized;
  await bridge.sendToolInput({ arguments: args });
  const result = (await client.callTool({ name: toolName, arguments: args })) as CallToolResult;
  await bridge.sendToolResult(result);
  show('shown', `The assistant called ${toolName}; the server's app shows its result.`);
}

main().catch((error: unknown) => show('failed', String(error)));
