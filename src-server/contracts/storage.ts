/** Browser local-storage keys shared by the studio and the server-rendered pages. */
export const TOKEN_STORAGE_KEY = 'svc.token';
export const PANE_SIZES_STORAGE_KEY = 'svc.panes';
