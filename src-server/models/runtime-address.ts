/**
 * LOCAL_LLM_BASE may carry credentials, as in `https://user:password@ollama.internal`, for a runtime behind a proxy
 * that asks for them. They go in an Authorization header (fetch refuses a URL with credentials), and every address
 * that is shown (in /models, in a run's error_detail, in logs) is written without them.
 */
export interface RuntimeAddress {
  /** The address without its credentials: what requests go to and what is shown. */
  url: string;
  /** `Authorization: Basic …` when the configured address had credentials. */
  headers: Record<string, string>;
}

export function runtimeAddress(configured: string): RuntimeAddress {
  const url = new URL(configured);
  if (!url.username && !url.password) return { url: configured, headers: {} };
  const user = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  url.username = '';
  url.password = '';
  return {
    url: url.href,
    headers: { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` },
  };
}

/** An address fit to show: its credentials removed. */
export function shownAddress(configured: string): string {
  try {
    return runtimeAddress(configured).url;
  } catch {
    return configured.replace(/\/\/[^/@]*@/, '//');
  }
}

/** The parts of the configured address that are secrets, for the log masker. */
export function addressSecrets(configured: string): string[] {
  try {
    const url = new URL(configured);
    return [url.username, url.password].filter(Boolean).map((part) => decodeURIComponent(part));
  } catch {
    return [];
  }
}
