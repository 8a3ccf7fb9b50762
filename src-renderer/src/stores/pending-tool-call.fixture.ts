import type { PendingToolCall } from '@contracts/tools';

/** For the studio's tests: a write the model asked for, waiting for a person, under the given call id. */
export const pendingWrite = (callId: string): PendingToolCall => ({
  call_id: callId,
  tool: 'project.write_file',
  server: 'project',
  description: '',
  arguments: {},
  canonical_arguments: '{}',
  arguments_sha256: 'x',
  input_schema: {},
  annotations: { read_only: false, idempotent: true, destructive: true },
  interrupted: false,
  attempts: 0,
});
