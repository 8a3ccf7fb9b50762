import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';
import { useIntegrationServer } from '../helpers/integration';
import { readEvents } from '../helpers/sse';

/**
 * The server of the run-context tests (context.int.test.ts, and context.system.test.ts for git URLs): a local budget
 * of 600 tokens, so that a project's context and a thread are cut, and a data folder of its own (the clone cache).
 */
export function useContextServer() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-data-'));
  // Registered first, so it runs last: after the fixture has stopped the server.
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const ctx = useIntegrationServer({ server: { LOCAL_LLM_MAX_CONTEXT_TOKENS: '600', DATA_DIR: dataDir } });
  /** Runs the summary agent on the file's server with a project path (a folder or a git URL); its events. */
  const runOnProject = async (message: string, projectPath: string) =>
    readEvents(
      await ctx.server.request('/graphs/summary/run', { method: 'POST', json: { message, project_path: projectPath } }),
    );
  return { ctx, dataDir, runOnProject };
}

/** The messages a model request carried, as one text to search. */
export const prompt = (request: Record<string, unknown>) => JSON.stringify(request.messages);
