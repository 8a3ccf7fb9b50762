import { chromium, type Browser, type LaunchOptions } from 'playwright-core';

/**
 * Debian's Chromium with the flags this closed network needs (README: what the tests need); one list for
 * the browser specs' Playwright config and for the vitest files that drive a browser themselves.
 */
export const chromiumLaunchOptions: LaunchOptions = {
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
};

/** That Chromium, for a vitest file that drives a browser itself. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch(chromiumLaunchOptions);
}
