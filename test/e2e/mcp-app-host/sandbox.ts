/**
 * The sandbox proxy of the test host (app-host.ts): the frame of another origin that the MCP Apps extension puts
 * between a web host's page and an app. It loads the app's HTML, which the host sends, into a frame of its own, and
 * passes every other message across, taking them from the host's origin only and sending them to it only.
 */

const hostOrigin = new URLSearchParams(location.search).get('host')!;
const inner = document.createElement('iframe');
inner.title = 'Approval card';
inner.setAttribute('sandbox', 'allow-scripts allow-same-origin');
document.body.append(inner);

window.addEventListener('message', (event: MessageEvent) => {
  if (event.source === window.parent && event.origin === hostOrigin) {
    if (event.data?.method === 'ui/notifications/sandbox-resource-ready') {
      inner.srcdoc = event.data.params.html as string;
    } else {
      inner.contentWindow?.postMessage(event.data, location.origin);
    }
  } else if (event.source === inner.contentWindow && event.origin === location.origin) {
    window.parent.postMessage(event.data, hostOrigin);
  }
});

window.parent.postMessage({ jsonrpc: '2.0', method: 'ui/notifications/sandbox-proxy-ready', params: {} }, hostOrigin);
