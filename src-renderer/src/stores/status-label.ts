import type { RunStatus } from '@contracts/runs';

/** A run's status in the studio's words: people read these, the API's codes stay in the API. */
export const STATUS_LABELS: Record<RunStatus, string> = {
  queued: 'Queued',
  running: 'Running',
  waiting_approval: 'Waiting for approval',
  completed: 'Completed',
  rejected: 'Rejected',
  error: 'Failed',
  cancelled: 'Cancelled',
};

export const statusLabel = (status: RunStatus | null | undefined): string =>
  status ? STATUS_LABELS[status] : 'No runs yet';

/** Where an id must show: its first 8 characters, the whole one in a title or a copy button. */
export const shortId = (id: string | null | undefined): string => (id ? id.slice(0, 8) : '—');
