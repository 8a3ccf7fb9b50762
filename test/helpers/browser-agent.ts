/**
 * A browser's part in a sign-in, over plain HTTP: it follows redirects, keeps cookies per host (as a browser does,
 * whatever the port), and posts the forms it is shown. For the OAuth flows of MCP clients, whose person signs in at a
 * real OpenID provider (oidc-provider's own login and consent forms) and allows the client on the service's page.
 */
export class BrowserAgent {
  private readonly cookies = new Map<string, Map<string, string>>();

  /** Requests `url` (following redirects) until an address that `stop` accepts, or a page: answers where it ended. */
  async go(
    url: string,
    stop: (url: string) => boolean = () => false,
    init: { method?: string; form?: Record<string, string> } = {},
  ): Promise<{ url: string; status: number; html: string }> {
    let method = init.method ?? 'GET';
    let body = init.form ? new URLSearchParams(init.form).toString() : undefined;
    for (let hops = 0; hops < 20; hops += 1) {
      if (stop(url)) return { url, status: 0, html: '' };
      const res = await fetch(url, {
        method,
        redirect: 'manual',
        headers: {
          accept: 'text/html',
          cookie: this.cookieHeader(url),
          ...(body ? { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(url).origin } : {}),
        },
        body,
      });
      this.keep(url, res.headers.getSetCookie());
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location) {
        url = new URL(location, url).href;
        // 303, and 302 after a POST as browsers do it, become a GET.
        if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
          method = 'GET';
          body = undefined;
        }
        continue;
      }
      return { url, status: res.status, html: await res.text() };
    }
    throw new Error(`too many redirects from ${url}`);
  }

  /** Posts the page's form (the first, or the one whose action contains `action`) with `fields` filled in. */
  async submit(
    page: { url: string; html: string },
    fields: Record<string, string>,
    stop?: (url: string) => boolean,
    action?: string,
  ) {
    const forms = [...page.html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)];
    const form = forms.find((f) => !action || (attribute(f[1]!, 'action') ?? '').includes(action));
    if (!form) throw new Error(`no form on ${page.url}:\n${page.html.slice(0, 500)}`);
    const values: Record<string, string> = {};
    for (const input of form[2]!.matchAll(/<input\b([^>]*)>/gi)) {
      const name = attribute(input[1]!, 'name');
      if (name && attribute(input[1]!, 'type') === 'hidden') values[name] = attribute(input[1]!, 'value') ?? '';
    }
    const target = new URL(attribute(form[1]!, 'action') ?? page.url, page.url).href;
    return this.go(target, stop, { method: 'POST', form: { ...values, ...fields } });
  }

  private cookieHeader(url: string): string {
    const jar = this.cookies.get(new URL(url).hostname);
    return jar ? [...jar].map(([name, value]) => `${name}=${value}`).join('; ') : '';
  }

  private keep(url: string, setCookies: string[]): void {
    const host = new URL(url).hostname;
    const jar = this.cookies.get(host) ?? new Map<string, string>();
    this.cookies.set(host, jar);
    for (const line of setCookies) {
      const [pair, ...attributes] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const gone = attributes.some((a) => /^\s*(max-age=0|expires=thu, 01 jan 1970)/i.test(a));
      if (gone || value === '') jar.delete(name);
      else jar.set(name, value);
    }
  }
}

const decode = (text: string) =>
  text.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code))).replace(/&amp;/g, '&');

function attribute(tag: string, name: string): string | undefined {
  const found = new RegExp(`\\b${name}\\s*=\\s*"([^"]*)"`, 'i').exec(tag);
  return found ? decode(found[1]!) : undefined;
}

/**
 * Signs `login` in at oidc-provider's development forms (any login and password), from wherever `start` leads, through
 * the provider's consent, until an address `stop` accepts or a page of another origin than the provider's.
 */
export async function signInAtProvider(
  agent: BrowserAgent,
  start: string,
  providerIssuer: string,
  login: string,
  stop: (url: string) => boolean,
) {
  let page = await agent.go(start, stop);
  for (let steps = 0; steps < 4 && page.status !== 0 && page.url.startsWith(providerIssuer); steps += 1) {
    page = /name="login"/.test(page.html)
      ? await agent.submit(page, { login, password: 'any password' }, stop)
      : await agent.submit(page, {}, stop);
  }
  return page;
}
