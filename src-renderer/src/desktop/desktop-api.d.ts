import type { DesktopApi } from '../../../src-main/desktop-api';

declare global {
  interface Window {
    /** Present only inside the desktop app (exposed by its preload script). */
    desktop?: DesktopApi;
  }
}

export {};
